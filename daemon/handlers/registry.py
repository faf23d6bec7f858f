"""The handler registry: one coroutine per request type.

A handler is `async def h(services, request)`; registered with `session=True` it is
`async def h(services, request, session)`, the request's `session` field (an id, a
unique id prefix or a name) resolved once, before it runs (an unknown or ambiguous
reference is answered with its error code and the handler never runs); registered
with `caller=True` it is also given `caller=`, who sent the request (a `Caller`).

Transports call every registered handler alike: `HANDLERS[type(request)](services,
request, caller)`.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol.replies import Reply
from ctxkeep.protocol.requests import Request

if TYPE_CHECKING:
    from ctxkeep.daemon.services import Services

__all__ = ["Caller", "HANDLERS", "LOCAL", "RequestError", "WAITING", "handles"]

R = TypeVar("R", bound=Request)


@dataclass(frozen=True)
class Caller:
    """Who sent a request, as its transport knows: `remote` for a client on another
    machine (TCP), which may be allowed less (e.g. no @file references)."""

    remote: bool = False
    #: Whether `@path` in its messages names files to read: not for HTTP clients, whose
    #: users type text for a model, not paths on the daemon's machine (an `@` stays text).
    files: bool = True


LOCAL = Caller()
Handler = Callable[["Services", Any, Caller], Awaitable[Reply]]

#: Request class -> handler. Filled by the @handles decorators of this package's modules.
HANDLERS: dict[type[Request], Handler] = {}
#: Requests whose handlers wait on something (a commit, a file, a model): the control loop
#: answers them in a task of their own, so that other clients are served meanwhile.
WAITING: set[type[Request]] = set()


def handles(request_type: type[R], *, session: bool = False, waits: bool = False,
            caller: bool = False) -> Callable[[Any], Any]:
    """Register the decorated coroutine as the handler of `request_type`; with `session`,
    it gets the resolved session record as its third argument; with `caller`, who sent
    the request as `caller=`; with `waits`, it awaits something slow (see WAITING)."""
    def register(fn: Callable[..., Awaitable[Reply]]) -> Callable[..., Awaitable[Reply]]:
        if request_type in HANDLERS:
            raise RuntimeError(f"two handlers for {request_type.__name__}")
        if waits:
            WAITING.add(request_type)
        HANDLERS[request_type] = _calling(fn, session, caller)
        return fn
    return register


def _calling(fn: Callable[..., Awaitable[Reply]], session: bool, caller: bool) -> Handler:
    """`fn` called the one way transports call a handler."""
    if session and caller:
        async def handler(services: "Services", req: Any, who: Caller = LOCAL) -> Reply:
            return await fn(services, req, services.store.sessions.get(req.session), caller=who)
    elif session:
        async def handler(services: "Services", req: Any, who: Caller = LOCAL) -> Reply:
            return await fn(services, req, services.store.sessions.get(req.session))
    elif caller:
        async def handler(services: "Services", req: Any, who: Caller = LOCAL) -> Reply:
            return await fn(services, req, caller=who)
    else:
        async def handler(services: "Services", req: Any, who: Caller = LOCAL) -> Reply:
            return await fn(services, req)
    return handler
