"""OpenAI's HTTP API as its clients use it against a local server: `/v1/models`,
`/v1/chat/completions` (server-sent events, or one object) run as a session turn with
`usage.prompt_tokens` the exact count, and `/v1/embeddings`; models and embeddings come
from whichever model server has them.
`num_ctx` (top level or in `options`, as extra body fields) is honoured."""

import time
import uuid
from contextlib import aclosing
from typing import Any

import msgspec
from aiohttp import web

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import ResponseGeneration
from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.transports.http.chat import ChatRequest, Chats, check_extras, settings, split_messages, tools_of
from ctxkeep.daemon.transports.http.errors import HttpError, openai_error
from ctxkeep.daemon.transports.http.wire import memory_header, read_json


class StreamOptions(msgspec.Struct, kw_only=True):
    include_usage: bool = False


class ChatCompletion(msgspec.Struct, kw_only=True):
    """POST /v1/chat/completions' body (the fields ctxkeepd reads; others are ignored)."""

    model: str
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


def chat_request(body: ChatCompletion, header_session: str) -> ChatRequest:
    system, history, new = split_messages(body.messages)
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
                       session=header_session or body.session, tools=tools_of(body.tools))


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


def _usage(done: Any) -> dict[str, int]:
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
            body = await read_json(request, dict)
            if "model" not in body or "input" not in body:
                raise HttpError(ErrorCode.INVALID_REQUEST.value, "model and input are required")
            texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise HttpError(ErrorCode.INVALID_REQUEST.value, "input must be a string or a list of strings")
            vectors = await self.chats.services.backend.embed(body["model"], texts)
        except HttpError as error:
            return openai_error(error)
        except ModelCallError as error:
            return openai_error(HttpError(error.code.value, error.message))
        count = sum(self.chats.services.estimator.text(body["model"], t) for t in texts)
        return web.json_response({"object": "list", "model": body["model"], "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": count, "total_tokens": count}})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await read_json(request, ChatCompletion, self.chats.services.config.http_max_messages)
            chat = await self.chats.intake(len(body.messages), chat_request, body,
                                           request.headers.get("X-Ctxkeep-Session", ""))
            chat.memory = memory_header(request)
        except HttpError as error:
            return openai_error(error)
        created = int(time.time())
        async with aclosing(self.chats.answer(chat)) as answer:
            try:
                kind, value = await anext(answer)
            except HttpError as error:
                return openai_error(error)
            if not body.stream:
                return await self._whole(body, kind, value, answer, created)
            return await self._stream(request, body, kind, value, answer, created)

    async def _whole(self, body: ChatCompletion, kind: str, value: Any, answer, created: int) -> web.Response:
        content = []
        try:
            while kind != "done":
                if kind == "token":
                    content.append(value)
                kind, value = await anext(answer)
        except HttpError as error:
            return openai_error(error)
        return web.json_response({
            "id": f"chatcmpl-{value.generation_id}", "object": "chat.completion", "created": created,
            "model": body.model, "system_fingerprint": "ctxkeep",
            "choices": [{"index": 0, "message": {
                "role": "assistant", "content": "".join(content) or (None if value.message.tool_calls else ""),
                **({"tool_calls": _tool_calls(value)} if value.message.tool_calls else {})},
                "finish_reason": _finish(value), "logprobs": None}],
            "usage": _usage(value)})

    async def _stream(self, request: web.Request, body: ChatCompletion, kind: str, value: Any,
                      answer, created: int) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache"})
        await response.prepare(request)
        ident = f"chatcmpl-{uuid.uuid4().hex[:24]}"

        async def send(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            chunk = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": body.model,
                     "system_fingerprint": "ctxkeep",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            if "usage" in extra:
                chunk["choices"] = []
            await response.write(b"data: " + msgspec.json.encode(chunk) + b"\n\n")
        try:
            await send({"role": "assistant", "content": ""})
            while kind != "done":
                if kind == "token":
                    await send({"content": value})
                kind, value = await anext(answer)
            if value.message.tool_calls:
                await send({"tool_calls": _tool_calls(value, streamed=True)})
            await send({}, _finish(value))
            if body.stream_options and body.stream_options.include_usage:
                await send({}, usage=_usage(value))
        except HttpError as error:
            await response.write(b"data: " + msgspec.json.encode({"error": {
                "message": error.message, "type": "server_error", "param": None, "code": error.code}}) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
