"""A chat request run as a session's turn over HTTP: begun in one step (its session found,
its message sent and accepted), then its events as they come; a client that hangs up
part-way cancels it (never leaving a question pending, nor an empty session)."""

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ctxkeep.daemon.handlers.dispatch import dispatch
from ctxkeep.daemon.transports.http.chat import ChatRequest, Chats
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import Event, GenerationError, ResponseGeneration
from ctxkeep.protocol.replies import Accepted

#: How long a client's retry waits for the turn it replaces to end (cancelled when its client
#: hung up, or ending its compaction) before it is refused as busy.
RETRY_WAIT_S = 30.0
#: Cancels of turns whose client went away while they were begun (kept until they end).
_CANCELLING: set["asyncio.Task[None]"] = set()


@dataclass
class Started:
    """A turn begun over HTTP: its session and generation, and its events as they come."""

    session_id: str
    generation: str
    events: "asyncio.Queue[Event]"
    stop: Callable[[], None]


class Abandoned(Exception):
    """The client went away before its turn's turn came: nothing of it was done."""


async def start(chats: Chats, chat: ChatRequest, gone: asyncio.Event | None = None) -> Started:
    """The turn begun: its session found or made, the new message sent and accepted, its
    events heard from then on. One step whatever the client does meanwhile (answering.py
    shields it): a client that hangs up part-way leaves a turn that was accepted, and is
    then cancelled (interrupted: a retry regenerates it), or none at all — never a
    question left pending, nor an empty session made for nothing. `gone`: set once the
    client went away (a turn it no longer waits for is not begun at all)."""
    async with _one_at_a_time(conversation(chat)):  # a retry sees what the request before it stored
        if gone is not None and gone.is_set():  # its client left while another turn of it began
            raise Abandoned()
        session_id, made = await chats.session_for(chat)
        if chat.retry:  # the turn of the client that hung up may still be ending: this one follows it
            await chats.services.jobs.idle(session_id, RETRY_WAIT_S)
        events: asyncio.Queue[Event] = asyncio.Queue()
        stop = chats.services.bus.listen(lambda e: events.put_nowait(e) if e.session_id == session_id else None)
        new = chat.new
        turn: dict[str, Any] = {"session": session_id, "tools": chat.tools, "think": chat.think,
                                "format": chat.format, "keep_alive": chat.keep_alive}
        try:
            accepted = await chats.call(requests.Regenerate(**turn, continues=chat.continues) if chat.retry else requests.Send(
                text="" if new.tool_results else new.content, images=new.images,
                tool_results=new.tool_results, **turn))
        except BaseException:
            stop()
            await chats.discard(session_id, made)
            raise
    assert isinstance(accepted, Accepted)
    return Started(session_id, accepted.generation_id, events, stop)


def conversation(chat: ChatRequest) -> str:
    """What the request is a turn of: its named session, or its conversation (the system
    prompt and first message a stateless client sends every time)."""
    if chat.session:
        return f"name:{chat.session}"
    first = chat.history[0].content if chat.history else chat.new.content
    return f"chat:{hash((chat.system, first))}"


_LOCKS: dict[str, asyncio.Lock] = {}


@asynccontextmanager
async def _one_at_a_time(key: str) -> AsyncIterator[None]:
    """Turns of one conversation begun one after another (others at once)."""
    lock = _LOCKS.setdefault(key, asyncio.Lock())
    try:
        async with lock:
            yield
    finally:
        if not lock.locked() and not lock._waiters:  # the last user frees its entry
            _LOCKS.pop(key, None)


def abandon(chats: Chats, starting: "asyncio.Future[Started]") -> None:
    """The client went away while its turn was being begun: once it is, stop listening and
    cancel it (its question stays, with an interrupted answer)."""
    def begun(f: "asyncio.Future[Started]") -> None:
        if f.cancelled() or f.exception() is not None:
            return
        task = asyncio.ensure_future(cancel(chats, f.result()))
        _CANCELLING.add(task)
        task.add_done_callback(_CANCELLING.discard)
    starting.add_done_callback(begun)


async def cancel(chats: Chats, started: Started) -> None:
    """Stop hearing the turn and cancel it."""
    started.stop()
    await dispatch(chats.services, requests.Cancel(session=started.session_id, generation_id=started.generation),
                   chats.caller)


async def run(chats: Chats, started: Started) -> AsyncIterator[Event]:
    """The begun turn's events up to its terminal one. If the caller stops listening first
    (its client went away), the turn is cancelled: its partial answer stays in history,
    marked interrupted."""
    ended = False
    try:
        while not ended:
            event = await started.events.get()
            if getattr(event, "generation_id", None) != started.generation:
                continue
            ended = isinstance(event, (ResponseGeneration, GenerationError))
            yield event
    finally:
        if ended:
            started.stop()
        else:
            await asyncio.shield(cancel(chats, started))
