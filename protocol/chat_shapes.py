"""Chat messages in Ollama's and OpenAI's shapes, read into ctxkeep's: text (OpenAI's content
parts joined), images (Ollama's base64 `images`, OpenAI's `image_url` data URLs, an export's
`{name, data}`), an answer's tool calls (OpenAI's arguments are a JSON string) and tool
results (Ollama's `tool_name`; OpenAI's `tool_call_id`, named by the call it answers).
Consecutive `tool` messages become one message holding all their results, as ctxkeep keeps
them. Shared by `ctxkeep import` and the HTTP front door."""

import json
from typing import Any

import msgspec

from .codec import MAX_DEPTH, too_deep
from .images import ImageInput
from .imported import ImportedMessage
from .tools import ToolCall, ToolResult, results_text


class NotAMessage(ValueError):
    """A message this reader cannot take: why, naming it."""


def text_of(content: Any) -> str:
    """A message's content: a string, or OpenAI's list of parts (their text joined)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    raise NotAMessage(f"its content is {type(content).__name__}, not text")


def images_of(message: dict[str, Any]) -> list[ImageInput]:
    """A message's images: Ollama's base64 strings, an export's {name, data}, OpenAI's
    `image_url` parts as data URLs (a web address cannot be fetched here)."""
    out = [ImageInput(data=i) if isinstance(i, str) else msgspec.convert(i, ImageInput)
           for i in message.get("images") or ()]
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            if not url.startswith("data:") or "," not in url:
                raise NotAMessage("an image_url must be a data URL (data:image/png;base64,…): "
                                  "ctxkeepd does not fetch web addresses")
            out.append(ImageInput(data=url.split(",", 1)[1]))
    return out


def calls_of(raw: Any) -> list[ToolCall]:
    """An answer's tool calls, from either shape."""
    out = []
    for call in raw or ():
        function = call.get("function") or {}
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            if too_deep(arguments.encode("utf-8", "replace")):
                raise NotAMessage(f"the arguments of its call to {function.get('name')!r} nest deeper than "
                                  f"{MAX_DEPTH} levels: flatten them")
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (json.JSONDecodeError, RecursionError):
                raise NotAMessage(f"the arguments of its call to {function.get('name')!r} are not JSON") from None
        if not isinstance(arguments, dict):
            raise NotAMessage(f"the arguments of its call to {function.get('name')!r} are "
                              f"{type(arguments).__name__}, not an object (name: value, ...)")
        out.append(msgspec.convert({"function": {"name": function.get("name", ""), "arguments": arguments}},
                                   ToolCall))
    return out


def call_names(raw: Any) -> dict[str, str]:
    """OpenAI's call ids of an answer's tool calls, to the names they call."""
    return {c["id"]: (c.get("function") or {}).get("name", "") for c in raw or () if c.get("id")}


def imported(messages: list[dict[str, Any]]) -> list[ImportedMessage]:
    """Messages of either shape (and an export's own fields) as ctxkeep's, `developer` read as
    `system`; NotAMessage names the first it cannot take."""
    out: list[ImportedMessage] = []
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        try:
            role = "system" if m.get("role") == "developer" else m.get("role")
            if role == "tool":
                results = msgspec.convert(m["tool_results"], list[ToolResult]) if m.get("tool_results") else [
                    ToolResult(tool_name=m.get("tool_name") or m.get("name")
                               or names.get(m.get("tool_call_id", ""), "") or "tool",
                               content=text_of(m.get("content")))]
                if out and out[-1].role == "tool":  # one message holds an answer's results
                    out[-1].tool_results.extend(results)
                    out[-1].content = results_text(out[-1].tool_results)
                    continue
                out.append(ImportedMessage(role="tool", content=results_text(results), tool_results=results))
                continue
            names = call_names(m.get("tool_calls")) or names
            fields = {"role": role, "content": text_of(m.get("content")), "thinking": m.get("thinking") or "",
                      "kind": m.get("kind") or "message", "status": m.get("status") or "complete",
                      "error": m.get("error") or "", "tool_calls": calls_of(m.get("tool_calls")),
                      "images": images_of(m),
                      **{k: m[k] for k in ("reply_to", "alternative_of") if isinstance(m.get(k), int)},
                      **({"created": m["created"]} if isinstance(m.get("created"), (int, float)) else {})}
            out.append(msgspec.convert(fields, ImportedMessage))
        except (msgspec.ValidationError, NotAMessage, AttributeError, TypeError) as exc:
            raise NotAMessage(f"message {i + 1}: {exc} (roles: system, user, assistant, tool)") from None
    return out
