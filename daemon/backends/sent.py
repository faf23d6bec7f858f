"""When a model request has left the daemon.

A turn has its question committed only once its model request is out, so that the
writer thread does not take the GIL while the request is being sent. The turn sets
`ON_SENT` while it creates the task that makes the request (a task carries the
context it was created in); the daemon's transport (`refuse_overflow.RefuseOverflow`)
passes it to httpx's `trace` request extension, which reports each step of the
exchange: the callback runs once the request's body is written.
"""

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

#: Called once the current task's model request has been written to Ollama's socket.
ON_SENT: ContextVar[Callable[[], object] | None] = ContextVar("on_sent", default=None)

#: The `trace` events (httpcore's names) that mean the whole request is out.
SENT_EVENTS = frozenset({"http11.send_request_body.complete", "http2.send_request_body.complete"})

Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


def tracer(on_sent: Callable[[], object], outer: Trace | None = None) -> Trace:
    """A `trace` extension calling `on_sent` when the request is out (and `outer`, a
    trace the request already had, for every event)."""
    async def trace(event: str, info: dict[str, Any]) -> None:
        if event in SENT_EVENTS:
            on_sent()
        if outer is not None:
            await outer(event, info)
    return trace
