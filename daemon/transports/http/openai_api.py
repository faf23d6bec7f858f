"""OpenAI's HTTP API as its clients use it against a local server: `/v1/models`,
`/v1/chat/completions` (server-sent events, or one object) run as a session turn with
`usage.prompt_tokens` the exact count, and `/v1/embeddings`; models and embeddings come
from whichever model server has them.
`num_ctx` (top level or in `options`, as extra body fields) is honoured."""

import time
import uuid
from typing import Annotated, Any

import msgspec
from aiohttp import web

from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.transports.http.answering import intake, respond
from ctxkeep.daemon.transports.http.chat import ChatRequest, Chats, check_extras, settings, split_messages, tools_of
from ctxkeep.daemon.transports.http.errors import HttpError, openai_error
from ctxkeep.daemon.transports.http.wire import read_json
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationThinking, GenerationToken, ResponseGeneration
from ctxkeep.protocol.limits import ModelName


class StreamOptions(msgspec.Struct, kw_only=True):
    include_usage: bool = False


class ChatCompletion(msgspec.Struct, kw_only=True):
    """POST /v1/chat/completions' body (the fields ctxkeepd reads; others are ignored)."""

    model: ModelName
    #: OpenAI's message shape (content parts with image_url data URLs, tool_calls with JSON
    #: arguments, tool messages by tool_call_id), read by protocol/chat_shapes.py.
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    tools: list[Any] | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    num_ctx: Any = None
    options: dict[str, Any] | None = None
    session: str = ""


class Embeddings(msgspec.Struct, kw_only=True):
    """POST /v1/embeddings' body (the fields ctxkeepd reads; others are ignored)."""

    model: Annotated[ModelName, msgspec.Meta(min_length=1)]
    input: str | list[str]


def chat_request(body: ChatCompletion, header_session: str) -> ChatRequest:
    system, history, new, continues = split_messages(body.messages)
    options, num_ctx = settings(body.options, body.num_ctx)
    for name, value in (("temperature", body.temperature), ("top_p", body.top_p), ("seed", body.seed),
                        ("num_predict", body.max_completion_tokens or body.max_tokens),
                        ("frequency_penalty", body.frequency_penalty),
                        ("presence_penalty", body.presence_penalty),
                        ("stop", [body.stop] if isinstance(body.stop, str) else body.stop)):
        if value is not None:
            options[name] = value
    options, _ = settings(options)  # the OpenAI fields, as options, in range too
    think = {None: None, "none": False}.get(body.reasoning_effort, body.reasoning_effort)
    format = _format(body.response_format)
    check_extras(think, format)
    return ChatRequest(model=body.model, system=system, history=history, new=new, options=options,
                       num_ctx=num_ctx, think=think, format=format,
                       session=header_session or body.session, tools=tools_of(body.tools), continues=continues)


def _format(response_format: dict[str, Any] | None) -> str | dict[str, Any] | None:
    """OpenAI's `response_format` as Ollama's `format`, the way Ollama's own /v1 maps it."""
    kind = (response_format or {}).get("type", "text")
    if kind == "text":
        return None
    if kind == "json_object":
        return "json"
    schema = (response_format or {}).get("json_schema") or {}
    if kind == "json_schema" and isinstance(schema.get("schema"), dict):
        return schema["schema"]
    raise HttpError(ErrorCode.INVALID_REQUEST.value, 'response_format must be {"type": "text"}, '
                    '{"type": "json_object"} or {"type": "json_schema", "json_schema": {"schema": {...}}}')


def _tool_calls(done: ResponseGeneration, streamed: bool = False) -> list[dict[str, Any]]:
    """An answer's tool calls in OpenAI's shape (arguments as JSON text; ids made from the
    answer's seq: a client sends them back with the results, and they are read there)."""
    return [{**({"index": i} if streamed else {}), "id": f"call_{done.message.seq}_{i}", "type": "function",
             "function": {"name": c.function.name, "arguments": msgspec.json.encode(c.function.arguments).decode()}}
            for i, c in enumerate(done.message.tool_calls)]


def _finish(done: ResponseGeneration) -> str:
    return "tool_calls" if done.message.tool_calls else ("length" if done.message.done_reason == "length" else "stop")


def _usage(done: ResponseGeneration) -> dict[str, int]:
    return {"prompt_tokens": done.token_count, "completion_tokens": done.eval_count,
            "total_tokens": done.token_count + done.eval_count}


class OpenAIApi:
    """The routes of OpenAI's API."""

    def __init__(self, chats: Chats) -> None:
        self.chats = chats

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/v1/models", self.models), web.post("/v1/chat/completions", self.completions),
                web.post("/v1/embeddings", self.embeddings)]

    async def models(self, request: web.Request) -> web.Response:
        """Every model of every model server."""
        try:
            models = await self.chats.services.backend.installed(details=False)
        except ModelCallError as error:
            return openai_error(HttpError(error.code.value, error.message))
        return web.json_response({"object": "list", "data": [
            {"id": m.name, "object": "model", "owned_by": ",".join(m.hosts) or "library", "created": 0}
            for m in models]})

    async def embeddings(self, request: web.Request) -> web.Response:
        """Embeddings from the model server that serves the model."""
        try:
            body = await read_json(request, Embeddings)
            texts = [body.input] if isinstance(body.input, str) else body.input
            vectors = await self.chats.services.backend.embed(body.model, texts)
        except HttpError as error:
            return openai_error(error)
        except ModelCallError as error:
            return openai_error(HttpError(error.code.value, error.message))
        count = sum(self.chats.services.estimator.text(body.model, t) for t in texts)
        return web.json_response({"object": "list", "model": body.model, "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": count, "total_tokens": count}})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body, chat = await intake(request, self.chats, ChatCompletion, lambda b: len(b.messages), chat_request)
        except HttpError as error:
            return openai_error(error)
        return await respond(request, self.chats, chat, OpenAIShape(body), body.stream)


class OpenAIShape:
    """An answer as OpenAI writes one: server-sent `chat.completion.chunk`s (the usage in a
    chunk of its own when asked for), an error as an event, `[DONE]` last; or one
    `chat.completion`."""

    stream_headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

    def __init__(self, body: ChatCompletion) -> None:
        self.body = body
        self.created = int(time.time())
        self.ident = f"chatcmpl-{uuid.uuid4().hex[:24]}"

    def failed(self, error: HttpError) -> web.Response:
        return openai_error(error)

    def opening(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def piece(self, event: GenerationToken | GenerationThinking) -> list[bytes]:
        return [self._chunk({"content": event.text})] if isinstance(event, GenerationToken) else []

    def closing(self, done: ResponseGeneration) -> list[bytes]:
        calls = [self._chunk({"tool_calls": _tool_calls(done, streamed=True)})] if done.message.tool_calls else []
        usage = self.body.stream_options and self.body.stream_options.include_usage
        return [*calls, self._chunk({}, _finish(done)), *([self._chunk({}, usage=_usage(done))] if usage else [])]

    def broken(self, error: HttpError) -> list[bytes]:
        return [_event({"error": {"message": error.message, "type": "server_error", "param": None,
                                  "code": error.code}})]

    def ending(self) -> list[bytes]:
        return [b"data: [DONE]\n\n"]

    def whole(self, text: str, thinking: str, done: ResponseGeneration) -> dict[str, Any]:
        message = {"role": "assistant", "content": text or (None if done.message.tool_calls else ""),
                   **({"tool_calls": _tool_calls(done)} if done.message.tool_calls else {})}
        return {"id": f"chatcmpl-{done.generation_id}", "object": "chat.completion", "created": self.created,
                "model": self.body.model, "system_fingerprint": "ctxkeep",
                "choices": [{"index": 0, "message": message, "finish_reason": _finish(done), "logprobs": None}],
                "usage": _usage(done)}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        """A `chat.completion.chunk` (one with `usage` has no choices)."""
        choices = [] if "usage" in extra else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return _event({"id": self.ident, "object": "chat.completion.chunk", "created": self.created,
                       "model": self.body.model, "system_fingerprint": "ctxkeep", "choices": choices, **extra})


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + msgspec.json.encode(data) + b"\n\n"
