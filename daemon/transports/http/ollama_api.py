"""Ollama's HTTP API (docs/api.md of the Ollama project), answered by ctxkeepd: `/api/chat`
runs as a session turn; `/api/generate` is passed through once it is known to fit; the
endpoints that hold no conversation are Ollama's own answers, forwarded."""

import asyncio
import time
from typing import Annotated, Any

import msgspec
from aiohttp import web

from ctxkeep.daemon.backends.hosts import Hosts
from ctxkeep.daemon.transports.http.answering import intake, respond
from ctxkeep.daemon.transports.http.catalog import Catalog
from ctxkeep.daemon.transports.http.chat import ChatRequest, Chats, check_extras, settings, split_messages, tools_of
from ctxkeep.daemon.transports.http.errors import HttpError, ollama_error
from ctxkeep.daemon.transports.http.passthrough import Passthrough
from ctxkeep.daemon.transports.http.wire import NDJSON, read_json, rfc3339
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationThinking, GenerationToken, ResponseGeneration
from ctxkeep.protocol.limits import ModelName


class OllamaChat(msgspec.Struct, kw_only=True):
    """POST /api/chat's body."""

    model: ModelName
    #: Ollama's message shape (role, content, images, tool_calls, tool_name), read by
    #: protocol/chat_shapes.py.
    messages: list[dict[str, Any]] = []
    stream: bool = True
    options: dict[str, Any] | None = None
    think: bool | str | None = None
    format: str | dict[str, Any] | None = None
    keep_alive: str | float | None = None
    tools: list[Any] | None = None
    #: ctxkeep's own: a session by name (as the X-Ctxkeep-Session header).
    session: str = ""


class OllamaGenerate(msgspec.Struct, kw_only=True):
    """The fields of POST /api/generate's body that its window check reads."""

    model: Annotated[ModelName, msgspec.Meta(min_length=1)]
    prompt: str = ""
    system: str = ""
    options: dict[str, Any] | None = None
    #: Base64 images for a vision model (held to the limits of `send`).
    images: list[str] = []


#: The registries an HTTP client may have Ollama pull from (a name with no host is Ollama's own).
PULL_REGISTRIES = ("registry.ollama.ai", "ollama.com", "hf.co", "huggingface.co")
#: A /api/generate prompt longer than this is counted in a worker thread.
COUNT_ON_LOOP_CHARS = 64 * 1024


def image_limits(images: list[str], most: int, largest: int) -> None:
    """Refuse more images than `most`, or one whose bytes exceed `largest` (as `send` does)."""
    if len(images) > most:
        raise HttpError(ErrorCode.INVALID_ARGUMENT.value, f"{len(images)} images: a request may carry at "
                        f"most {most} (max_images_per_message in config.toml)")
    for i, data in enumerate(images):
        size = len(data) * 3 // 4 - data[-2:].count("=")
        if size > largest:
            raise HttpError(ErrorCode.INVALID_ARGUMENT.value, f"image {i + 1} is {size:,} bytes: at most "
                            f"{largest:,} are taken (max_image_bytes in config.toml)")


def chat_request(body: OllamaChat, header_session: str) -> ChatRequest:
    """The chat as the engine runs it."""
    system, history, new, continues = split_messages(body.messages)
    options, num_ctx = settings(body.options)
    format = body.format or None  # "" is Ollama's "no format"
    check_extras(body.think, format)
    return ChatRequest(model=body.model, system=system, history=history, new=new, options=options,
                       num_ctx=num_ctx, think=body.think, format=format,
                       keep_alive=body.keep_alive, session=header_session or body.session,
                       tools=tools_of(body.tools), continues=continues)


def _chunk(model: str, content: str = "", thinking: str = "", tool_calls: list | None = None,
           **final: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if tool_calls:
        message["tool_calls"] = msgspec.to_builtins(tool_calls)
    return {"model": model, "created_at": rfc3339(), "message": message, "done": bool(final), **final}


class OllamaApi:
    """The routes of Ollama's API."""

    def __init__(self, chats: Chats, passthrough: Passthrough) -> None:
        self.chats = chats
        self.passthrough = passthrough
        backend = chats.services.backend
        if not isinstance(backend, Hosts):  # what Ollama's read-only routes ask of: each server
            raise TypeError(f"Ollama's API is served over the daemon's model servers, not {type(backend).__name__}")
        self.catalog = Catalog(backend, passthrough)

    def routes(self) -> list[web.RouteDef]:
        forward = self._forward
        return [web.get("/", self.root),  # GET routes answer HEAD too
                web.post("/api/chat", self.chat), web.post("/api/generate", self.generate),
                web.get("/api/tags", self.tags), web.post("/api/show", self.show), web.get("/api/ps", forward),
                web.get("/api/version", forward), web.post("/api/embed", forward),
                web.post("/api/embeddings", forward), web.post("/api/pull", self.pull)]

    async def tags(self, request: web.Request) -> web.Response:
        """The models of every model server (Ollama's /api/tags, merged)."""
        try:
            return web.json_response(await self.catalog.tags())
        except HttpError as error:
            return ollama_error(error)

    async def show(self, request: web.Request) -> web.StreamResponse:
        """A model's facts, from whichever model server serves it."""
        try:
            return await self.catalog.show(request)
        except HttpError as error:
            return ollama_error(error)

    async def root(self, request: web.Request) -> web.Response:
        return web.Response(text="Ollama is running")  # what Ollama answers; clients probe it

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self.passthrough.forward(request, request.path)
        except HttpError as error:
            return ollama_error(error)

    async def generate(self, request: web.Request) -> web.StreamResponse:
        """Stateless: passed through, but refused when the prompt cannot fit its window
        (Ollama would cut its start silently)."""
        try:
            body = await read_json(request, OllamaGenerate)
            config = self.chats.services.config
            num_ctx = settings(body.options)[1] or config.num_ctx
            image_limits(body.images, config.max_images_per_message, config.max_image_bytes)
            messages = [{"role": "system", "content": body.system}] if body.system else []
            messages.append({"role": "user", "content": body.prompt})
            estimator = self.chats.services.estimator
            estimate = estimator.prompt(body.model, messages) if len(body.prompt) < COUNT_ON_LOOP_CHARS \
                else await asyncio.to_thread(estimator.prompt, body.model, messages)
            if estimate > num_ctx:
                raise HttpError(ErrorCode.CONTEXT_OVERFLOW.value, f"the prompt is about {estimate} tokens, "
                                f"over num_ctx {num_ctx}: Ollama would silently drop its start; shorten "
                                "it or raise options.num_ctx")
            return await self.passthrough.forward(request, request.path, await request.read())
        except HttpError as error:
            return ollama_error(error)

    async def pull(self, request: web.Request) -> web.StreamResponse:
        """Passed through to Ollama, for models of the registries Ollama's users pull from."""
        try:
            body = await read_json(request, dict)
            name = str(body.get("model") or body.get("name") or "")
            if not name.isascii():  # "evil。com/…": IDNA makes a host of it that no check here saw
                raise HttpError(ErrorCode.INVALID_REQUEST.value, f"{name[:80]!r} is not a model name: model "
                                "names are ASCII (letters, digits, . : / _ -)", 400)
            first = name.split("/", 1)[0] if "/" in name else ""
            if ("." in first or ":" in first) and first.lower() not in PULL_REGISTRIES:
                raise HttpError(ErrorCode.INVALID_REQUEST.value, f"{first!r} is not a registry ctxkeepd pulls "
                                f"from over HTTP ({', '.join(PULL_REGISTRIES)}): pull it with `ollama pull` "
                                "or `ctxkeep models pull` on this machine", 403)
            return await self.passthrough.forward(request, request.path, await request.read())
        except HttpError as error:
            return ollama_error(error)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        shape = OllamaShape(time.monotonic_ns())
        try:
            body, chat = await intake(request, self.chats, OllamaChat, lambda b: len(b.messages), chat_request)
        except HttpError as error:
            return ollama_error(error)
        shape.model = body.model
        return await respond(request, self.chats, chat, shape, body.stream)


class OllamaShape:
    """An answer as Ollama writes one: NDJSON chunks (a final one with its counts and
    durations), an error as a line of its own, or one object."""

    stream_headers = {"Content-Type": NDJSON}

    def __init__(self, started: int) -> None:
        self.model = ""
        self.started = self.first = started

    def failed(self, error: HttpError) -> web.Response:
        return ollama_error(error)

    def opening(self) -> list[bytes]:
        self.first = time.monotonic_ns()
        return []

    def piece(self, event: GenerationToken | GenerationThinking) -> list[bytes]:
        kind = "content" if isinstance(event, GenerationToken) else "thinking"
        return [_line(_chunk(self.model, content=event.text) if kind == "content"
                      else _chunk(self.model, thinking=event.text))]

    def closing(self, done: ResponseGeneration) -> list[bytes]:
        calls = [_line(_chunk(self.model, tool_calls=done.message.tool_calls))] if done.message.tool_calls else []
        return [*calls, _line(_chunk(self.model, **self._final(done)))]  # calls: a chunk of their own, as Ollama's

    def broken(self, error: HttpError) -> list[bytes]:
        return [_line({"error": error.message})]

    def ending(self) -> list[bytes]:
        return []

    def whole(self, text: str, thinking: str, done: ResponseGeneration) -> dict[str, Any]:
        return _chunk(self.model, text, thinking, done.message.tool_calls, **self._final(done))

    def _final(self, done: ResponseGeneration) -> dict[str, Any]:
        now = time.monotonic_ns()
        return {"done_reason": done.message.done_reason or "stop", "total_duration": now - self.started,
                "load_duration": 0, "prompt_eval_count": done.token_count,
                "prompt_eval_duration": max(self.first - self.started, 0),
                "eval_count": done.eval_count, "eval_duration": max(now - self.first, 0)}


def _line(chunk: dict[str, Any]) -> bytes:
    return msgspec.json.encode(chunk) + b"\n"
