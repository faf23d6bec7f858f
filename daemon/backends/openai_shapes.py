"""A chat in OpenAI's shapes: the engine's messages (Ollama's shape) and options as the
arguments of `chat.completions.create`, and a streamed answer's chunks read back as
`ChatChunk`s (tool calls arrive in pieces and are joined; the counts come from `usage`)."""

import base64
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras
from ctxkeep.daemon.store.images import media_type
from ctxkeep.protocol.tools import FunctionCall, ToolCall

#: Ollama's options with the same meaning and name in OpenAI's chat API.
SAME_NAME = ("temperature", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty")
#: Ollama's options that llama.cpp's, vLLM's and LM Studio's servers take beyond OpenAI's.
EXTRA_BODY = ("top_k", "min_p", "repeat_penalty", "typical_p")


def data_url(encoded: str) -> str:
    """An image (base64) as the data URL OpenAI's `image_url` takes."""
    head = base64.b64decode(encoded[:24] + "=" * (-len(encoded[:24]) % 4), validate=False)
    return f"data:{media_type(head) or 'image/png'};base64,{encoded}"


def folded_system(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages with the system messages' content opening the first user message (for a
    chat template that drops system messages: what they say still reaches the model)."""
    system = "\n\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    first = next((i for i, m in enumerate(rest) if m.get("role") == "user"), None)
    if not system or first is None:
        return rest if first is not None else list(messages)
    rest[first] = {**rest[first], "content": f"{system}\n\n{rest[first].get('content') or ''}"}
    return rest


def request_messages(messages: Sequence[Mapping[str, Any]], fold_system: bool = False) -> list[dict[str, Any]]:
    """The engine's messages in OpenAI's shape: images as `image_url` parts, an answer's
    calls with ids and JSON-string arguments, each tool result answering its call by id
    (the first call of that name not yet answered); with `fold_system`, system messages
    as the start of the first user message."""
    if fold_system:
        messages = folded_system(messages)
    out: list[dict[str, Any]] = []
    waiting: list[tuple[str, str]] = []  # (id, name) of calls not yet answered
    for i, m in enumerate(messages):
        role, content = m.get("role", "user"), m.get("content") or ""
        if m.get("tool_calls"):
            calls = []
            for j, call in enumerate(m["tool_calls"]):
                function = call.get("function") or {}
                waiting.append((f"call_{i}_{j}", function.get("name", "")))
                calls.append({"id": waiting[-1][0], "type": "function", "function": {
                    "name": function.get("name", ""), "arguments": json.dumps(function.get("arguments") or {})}})
            out.append({"role": "assistant", "content": content or None, "tool_calls": calls})
        elif role == "tool":
            match = next((w for w in waiting if w[1] == m.get("tool_name")), waiting[0] if waiting else None)
            if match is not None:
                waiting.remove(match)
            out.append({"role": "tool", "tool_call_id": match[0] if match else f"call_{i}", "content": content})
        elif m.get("images"):
            out.append({"role": role, "content": [{"type": "text", "text": content}] + [
                {"type": "image_url", "image_url": {"url": data_url(b64)}} for b64 in m["images"]]})
        else:
            out.append({"role": role, "content": content})
    return out


def request_params(options: Mapping[str, Any], extras: ChatExtras, continues: bool = False) -> dict[str, Any]:
    """Keyword arguments of `chat.completions.create` for Ollama-named `options` and the
    turn's extras. `num_predict` (the room the window leaves) becomes `max_tokens`;
    `num_ctx` is the server's to set and is not sent. `continues`: the messages end with
    an unfinished answer to go on from (llama.cpp's llama-server does so by itself; vLLM
    is told with `continue_final_message`; llama-cpp-python's server cannot: it answers
    anew after it)."""
    params: dict[str, Any] = {k: options[k] for k in SAME_NAME if options.get(k) is not None}
    extra = {k: options[k] for k in EXTRA_BODY if options.get(k) is not None}
    if continues:
        extra.update(continue_final_message=True, add_generation_prompt=False)
    if int(options.get("num_predict") or 0) > 0:
        params["max_tokens"] = int(options["num_predict"])
    if extras.tools:
        params["tools"] = extras.tools
    if extras.format == "json":
        params["response_format"] = {"type": "json_object"}
    elif isinstance(extras.format, dict):
        params["response_format"] = {"type": "json_schema",
                                     "json_schema": {"name": "answer", "schema": extras.format}}
    if isinstance(extras.think, str):
        params["reasoning_effort"] = extras.think
    elif isinstance(extras.think, bool):  # llama.cpp's and vLLM's templates read it
        extra["chat_template_kwargs"] = {"enable_thinking": extras.think}
    if extra:
        params["extra_body"] = extra
    return params


class StreamReader:
    """A streamed answer's `ChatCompletionChunk`s as ChatChunks, its tool calls joined
    from their pieces, the last one with the counts of `usage` and the time it took."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.started = time.monotonic_ns()
        self.first_at = 0
        self.finish = ""
        self.usage: Any = None
        self.timings: dict[str, Any] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        #: Chunks that carried text: a token each on llama.cpp's servers (the answer's count
        #: where a server leaves `usage` out).
        self.pieces = 0

    def read(self, event: Any) -> ChatChunk | None:
        """The text or thinking an event carries (None when it carries none)."""
        if getattr(event, "usage", None) is not None:
            self.usage = event.usage
        timings = (getattr(event, "model_extra", None) or {}).get("timings")
        if isinstance(timings, dict):  # llama.cpp's server: what its prompt cache served
            self.timings = timings
        text, thought = [], []
        for choice in event.choices or ():
            delta = choice.delta
            if delta is not None:
                text.append(delta.content or "")
                extra = delta.model_extra or {}
                thought.append(extra.get("reasoning_content") or extra.get("reasoning") or "")
                for piece in delta.tool_calls or ():
                    self._call_piece(piece)
            if choice.finish_reason:
                self.finish = choice.finish_reason
        if not (any(text) or any(thought)):
            return None
        self.pieces += 1
        self.first_at = self.first_at or time.monotonic_ns()
        return ChatChunk(content="".join(text), thinking="".join(thought))

    def _call_piece(self, piece: Any) -> None:
        call = self.calls.setdefault(piece.index or 0, {"name": "", "arguments": ""})
        if piece.function is not None:
            call["name"] += piece.function.name or ""
            call["arguments"] += piece.function.arguments or ""

    def final(self) -> ChatChunk:
        """The last chunk: the calls, why the answer ended, the counts."""
        calls = tuple(ToolCall(function=FunctionCall(name=c["name"], arguments=_arguments(c["arguments"])))
                      for _, c in sorted(self.calls.items()))
        now = time.monotonic_ns()
        usage = self.usage
        reading, writing = self.durations(now)
        return ChatChunk(
            tool_calls=calls, done=True, done_reason=self.finish,
            prompt_eval_count=None if usage is None else int(usage.prompt_tokens),
            prompt_eval_cached_count=cached_tokens(usage, self.timings),
            eval_count=self.pieces if usage is None else int(usage.completion_tokens or 0),
            total_duration=max(0, now - self.started), prompt_eval_duration=reading,
            eval_duration=writing, host=self.host)

    def durations(self, now: int) -> tuple[int, int]:
        """Nanoseconds the server spent reading the prompt and writing the answer: its own
        `timings` (llama.cpp's server), else, for a stream, until the first text and after
        it; (0, 0) for a whole answer without timings (the two cannot be told apart)."""
        timings = self.timings
        if isinstance(timings.get("prompt_ms"), (int, float)) and isinstance(timings.get("predicted_ms"), (int, float)):
            return max(0, int(timings["prompt_ms"] * 1e6)), max(0, int(timings["predicted_ms"] * 1e6))
        if not self.first_at:
            return 0, 0
        return max(0, self.first_at - self.started), max(0, now - self.first_at)


def cached_tokens(usage: Any, timings: dict[str, Any]) -> int | None:
    """The prompt tokens the server's cache served: `usage.prompt_tokens_details.cached_tokens`
    (OpenAI's API), else llama.cpp's `timings.cache_n`; None when it says neither."""
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        cached = timings.get("cache_n")
    return int(cached) if isinstance(cached, int) and cached >= 0 else None


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments, as the model wrote them (its text kept when not a JSON object)."""
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_value": value}


def answer_chunk(response: Any, host: str, started: int) -> ChatChunk:
    """A whole (not streamed) answer as one ChatChunk."""
    reader = StreamReader(host)
    reader.started = started
    message = response.choices[0].message if response.choices else None
    for call in (message.tool_calls if message else None) or ():
        reader.calls[len(reader.calls)] = {"name": call.function.name, "arguments": call.function.arguments}
    reader.usage, reader.finish = response.usage, response.choices[0].finish_reason if response.choices else ""
    timings = (getattr(response, "model_extra", None) or {}).get("timings")
    reader.timings = timings if isinstance(timings, dict) else {}
    final = reader.final()
    extra = (message.model_extra or {}) if message else {}
    thinking = extra.get("reasoning_content") or extra.get("reasoning") or ""
    return msgspec.structs.replace(final, content=(message.content or "") if message else "", thinking=thinking)
