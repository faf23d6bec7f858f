"""One answer path under both HTTP APIs. A chat request is read into the engine's terms
(`intake`), run as a session turn (turn_run.py), and its events written back (`respond`),
streamed or as one object; what differs between Ollama's API and OpenAI's is only the shape
of what is written, which each API gives as an `AnswerShape`."""

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any, Protocol, TypeAlias, TypeVar

from aiohttp import web

from ctxkeep.daemon.transports.http import turn_run
from ctxkeep.daemon.transports.http.chat import ChatRequest, Chats
from ctxkeep.daemon.transports.http.errors import HttpError
from ctxkeep.daemon.transports.http.wire import memory_header, read_json
from ctxkeep.protocol.events import (
    GenerationError,
    GenerationRecalled,
    GenerationThinking,
    GenerationToken,
    ResponseGeneration,
)

#: What an answer streams: its text, its thinking, and the end of the turn.
Piece: TypeAlias = GenerationToken | GenerationThinking | ResponseGeneration
Body = TypeVar("Body")


class AnswerShape(Protocol):
    """How one HTTP API writes an answer and its errors."""

    #: The streamed answer's Content-Type (and any other headers).
    stream_headers: dict[str, str]

    def failed(self, error: HttpError) -> web.Response:
        """The error, before anything of the answer was written."""

    def opening(self) -> list[bytes]:
        """Called once the turn has begun to answer: what a stream starts with (a whole
        answer writes none of it)."""

    def piece(self, event: GenerationToken | GenerationThinking) -> list[bytes]:
        """A streamed piece of the answer."""

    def closing(self, done: ResponseGeneration) -> list[bytes]:
        """What a stream ends with, after the answer's last piece."""

    def broken(self, error: HttpError) -> list[bytes]:
        """The error, inside a stream already under way."""

    def ending(self) -> list[bytes]:
        """What ends every stream, answered or broken."""

    def whole(self, text: str, thinking: str, done: ResponseGeneration) -> dict[str, Any]:
        """The answer as one object (a request with streaming off)."""


async def intake(request: web.Request, chats: Chats, kind: type[Body], messages: Callable[[Body], int],
                 read: Callable[[Body, str], ChatRequest]) -> tuple[Body, ChatRequest]:
    """A chat request's body (`kind`) and what it asks in the engine's terms (`read`), its
    session named by the X-Ctxkeep-Session header or the body, and its memory by
    X-Ctxkeep-Memory. Raises HttpError."""
    body = await read_json(request, kind, chats.services.config.http_max_messages)
    chat = await chats.intake(messages(body), read, body, request.headers.get("X-Ctxkeep-Session", ""))
    chat.memory = memory_header(request)
    return body, chat


def added_headers(recalled: GenerationRecalled | None) -> dict[str, str]:
    """What the answer's prompt was given beside the conversation, as response headers:
    `X-Ctxkeep-Memory-Added` (other sessions' passages: how many sessions, and about how
    many tokens; `X-Ctxkeep-Memory: none` turns memory off), `X-Ctxkeep-Recalled` (the
    conversation's own earlier turns), `X-Ctxkeep-Recall-Cut` (why less than was found)."""
    if recalled is None:
        return {"X-Ctxkeep-Memory-Added": "sessions=0; tokens=0", "X-Ctxkeep-Recalled": "messages=0; tokens=0"}
    theirs = {p.session_id for p in recalled.recalled if p.session_id}
    own = {p.seq for p in recalled.recalled if not p.session_id}
    out = {"X-Ctxkeep-Memory-Added": f"sessions={len(theirs)}; tokens={recalled.memory_tokens}",
           "X-Ctxkeep-Recalled": f"messages={len(own)}; tokens={recalled.tokens - recalled.memory_tokens}"}
    if recalled.cut:
        out["X-Ctxkeep-Recall-Cut"] = recalled.cut.encode("ascii", "replace").decode()
    return out


async def respond(request: web.Request, chats: Chats, chat: ChatRequest, shape: AnswerShape,
                  stream: bool) -> web.StreamResponse:
    """Run the chat as a turn and write its answer in `shape`: a turn that fails before it
    answers is an error status; one that fails midway, an error in the stream. The headers
    say what memory and recall added to the prompt (`added_headers`)."""
    recalled: list[GenerationRecalled] = []
    async with aclosing(pieces(chats, chat, recalled.append)) as answer:
        try:
            first = await anext(answer)
        except HttpError as error:
            return shape.failed(error)
        opening = shape.opening()
        headers = added_headers(recalled[-1] if recalled else None)
        if not stream:
            return await _whole(first, answer, shape, headers)
        response = web.StreamResponse(headers={**shape.stream_headers, **headers})
        await response.prepare(request)
        try:
            await _stream(response, first, answer, shape, opening)
        except ConnectionResetError:
            pass  # the client hung up: its own act, not an error (the turn ends as turn_run says)
        return response


async def _stream(response: web.StreamResponse, first: Piece, answer: AsyncIterator[Piece], shape: AnswerShape,
                  opening: list[bytes]) -> None:
    try:
        await _write(response, opening)
        while not isinstance(first, ResponseGeneration):
            await _write(response, shape.piece(first))
            first = await anext(answer)
        await _write(response, shape.closing(first))
    except HttpError as error:
        await _write(response, shape.broken(error))
    await _write(response, shape.ending())
    await response.write_eof()


async def pieces(chats: Chats, chat: ChatRequest,
                 on_recalled: Callable[[GenerationRecalled], None] = lambda e: None) -> AsyncGenerator[Piece, None]:
    """The answer as it streams, up to its ResponseGeneration; a turn that fails raises
    HttpError. What recall and memory added goes to `on_recalled` (before the first piece)."""
    gone = asyncio.Event()
    starting = asyncio.ensure_future(turn_run.start(chats, chat, gone))
    try:
        started = await asyncio.shield(starting)  # one step, whatever the client does meanwhile
    except asyncio.CancelledError:
        gone.set()
        turn_run.abandon(chats, starting)
        raise
    async for event in turn_run.run(chats, started):
        if isinstance(event, GenerationError):
            raise HttpError(event.code, event.message)
        if isinstance(event, GenerationRecalled):
            on_recalled(event)
        if isinstance(event, (GenerationToken, GenerationThinking, ResponseGeneration)):
            yield event


async def _whole(first: Piece, answer: AsyncIterator[Piece], shape: AnswerShape,
                 headers: dict[str, str]) -> web.Response:
    text: list[str] = []
    thinking: list[str] = []
    try:
        while not isinstance(first, ResponseGeneration):
            (text if isinstance(first, GenerationToken) else thinking).append(first.text)
            first = await anext(answer)
    except HttpError as error:
        return shape.failed(error)
    return web.json_response(shape.whole("".join(text), "".join(thinking), first), headers=headers)


async def _write(response: web.StreamResponse, chunks: list[bytes]) -> None:
    for chunk in chunks:
        await response.write(chunk)
