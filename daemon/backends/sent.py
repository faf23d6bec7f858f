"""When a model request has left the daemon.

A turn has its question committed only once its model request is out, so that the
writer thread does not take the GIL while the request is being sent; it passes an
`on_sent` callback to `stream_chat`. The `ollama` package takes no per-request hook,
so the backend hands the callback to its own transport (`refuse_overflow.RefuseOverflow`)
through a context variable private to this package, set only while the first chunk is
awaited (the request goes out then, in the task that awaits it); the transport passes
it to httpx's `trace` request extension, which reports each step of the exchange: the
callback runs once the request's body is written.
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from typing import Any

#: Read by the transport while a request is being made (see the module's docstring).
_on_sent: ContextVar[Callable[[], object] | None] = ContextVar("on_sent", default=None)
#: Where the transport notes what the answer's bytes say that the `ollama` package drops
#: (`prompt_eval_cached_count`), for the stream being started.
_notes: ContextVar[dict[str, int] | None] = ContextVar("notes", default=None)

#: The `trace` events (httpcore's names) that mean the whole request is out.
SENT_EVENTS = frozenset({"http11.send_request_body.complete", "http2.send_request_body.complete"})

Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


async def sending(stream: AsyncIterator[Any], on_sent: Callable[[], object] | None,
                  notes: dict[str, int] | None = None) -> AsyncIterator[Any]:
    """`stream`, whose request (made while its first chunk is awaited) calls `on_sent`
    once it is out (and has its transport fill `notes`: `current_notes`)."""
    token, noting = _on_sent.set(on_sent), _notes.set(notes)
    try:
        first = await anext(stream, None)
    finally:
        _on_sent.reset(token)
        _notes.reset(noting)
    if first is None:
        return
    yield first
    async for chunk in stream:
        yield chunk


async def calling(call: Awaitable[Any], on_sent: Callable[[], object] | None) -> Any:
    """`await call`, a request made at once (the `openai` client's `create`), whose
    request calls `on_sent` once it is out."""
    token = _on_sent.set(on_sent)
    try:
        return await call
    finally:
        _on_sent.reset(token)


def current_trace(extensions: dict[str, Any]) -> dict[str, Any]:
    """A request's extensions with a `trace` that calls the awaiting turn's `on_sent`
    when the request is out (the same extensions when no turn awaits one)."""
    on_sent = _on_sent.get()
    if on_sent is None:
        return extensions
    return {**extensions, "trace": tracer(on_sent, extensions.get("trace"))}


def tracer(on_sent: Callable[[], object], outer: Trace | None = None) -> Trace:
    """A `trace` extension calling `on_sent` when the request is out (and `outer`, a
    trace the request already had, for every event)."""
    async def trace(event: str, info: dict[str, Any]) -> None:
        if event in SENT_EVENTS:
            on_sent()
        if outer is not None:
            await outer(event, info)
    return trace


def current_notes() -> dict[str, int] | None:
    """Where the stream being started wants the transport's notes (None: nowhere)."""
    return _notes.get()
