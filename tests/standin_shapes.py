"""What Ollama refuses before it reads a request: a field of the wrong JSON type. Ollama
decodes a body into Go structs, so a wrong type is a 400 that names the field; the stand-in
answers the same, so that a request ctxkeepd forwards unchecked fails as it would."""

from typing import Any

#: The fields of each route's body Ollama types, and the JSON types each takes.
_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "/api/chat": {"model": (str,), "messages": (list,), "stream": (bool,), "options": (dict,), "tools": (list,),
                  "format": (str, dict), "keep_alive": (str, int, float), "think": (bool, str)},
    "/api/generate": {"model": (str,), "prompt": (str,), "system": (str,), "stream": (bool,), "raw": (bool,),
                      "options": (dict,), "images": (list,), "keep_alive": (str, int, float), "think": (bool, str)},
    "/api/embeddings": {"model": (str,), "prompt": (str,), "options": (dict,), "keep_alive": (str, int, float)},
    "/api/show": {"model": (str,), "name": (str,), "verbose": (bool,), "options": (dict,)},
    "/api/embed": {"model": (str,), "input": (str, list), "truncate": (bool,), "options": (dict,),
                   "keep_alive": (str, int, float), "dimensions": (int,)},
    "/api/pull": {"model": (str,), "name": (str,), "insecure": (bool,), "stream": (bool,)},
}
_MESSAGE = {"role": (str,), "content": (str,), "images": (list,), "tool_calls": (list,), "thinking": (str,),
            "tool_name": (str,)}


def _typed(value: Any, kinds: tuple[type, ...]) -> bool:
    if value is None:
        return True  # null leaves a Go field as it was
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int):
        return int in kinds or float in kinds
    if isinstance(value, float):
        return float in kinds or (int in kinds and value.is_integer())
    return isinstance(value, kinds)


def shape_error(path: str, body: Any) -> str:
    """Why Ollama would refuse `body` at `path` before reading it ("" if it would not)."""
    if not isinstance(body, dict):
        return f"json: cannot unmarshal {type(body).__name__} into Go value of type api.Request"
    for name, kinds in _FIELDS.get(path, {}).items():
        if not _typed(body.get(name), kinds):
            return f"json: cannot unmarshal {type(body[name]).__name__} into Go struct field .{name}"
    if path == "/api/embed" and isinstance(body.get("input"), list) \
            and not all(isinstance(t, str) for t in body["input"]):
        return "invalid input type"
    for message in body.get("messages") or [] if path == "/api/chat" else []:
        if not isinstance(message, dict):
            return "json: cannot unmarshal into Go struct field ChatRequest.messages of type api.Message"
        for name, kinds in _MESSAGE.items():
            if not _typed(message.get(name), kinds):
                return f"json: cannot unmarshal into Go struct field Message.messages.{name}"
        if any(not isinstance(i, str) for i in message.get("images") or []):
            return "json: cannot unmarshal into Go struct field Message.messages.images of type api.ImageData"
    options = body.get("options")
    for name in INTEGER_OPTIONS if isinstance(options, dict) else ():
        if not _typed(options.get(name), (int,)):
            return f'option "{name}" must be of type integer'
    return ""


#: The options the stand-in reads as integers (Ollama checks every option's type).
INTEGER_OPTIONS = ("num_ctx", "num_predict")
