"""The handler registry: one coroutine per request type.

A handler is `async def h(services, request)`; registered with `session=True` it is
`async def h(services, request, session)`, the request's `session` field (an id, a
unique id prefix or a name) resolved once, before it runs (an unknown or ambiguous
reference is answered with its error code and the handler never runs).
"""

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol.replies import Reply
from ctxkeep.protocol.requests import Request

if TYPE_CHECKING:
    from ctxkeep.daemon.services import Services

__all__ = ["HANDLERS", "REMOTE", "RequestError", "WAITING", "handles"]

R = TypeVar("R", bound=Request)
Handler = Callable[["Services", Any], Awaitable[Reply]]

#: True while handling a request that came over TCP (a remote client).
REMOTE: ContextVar[bool] = ContextVar("remote", default=False)

#: Request class -> handler. Filled by the @handles decorators of this package's modules.
HANDLERS: dict[type[Request], Handler] = {}
#: Requests whose handlers wait on something (a commit, a file, a model): the control loop
#: answers them in a task of their own, so that other clients are served meanwhile.
WAITING: set[type[Request]] = set()


def handles(request_type: type[R], *, session: bool = False, waits: bool = False) -> Callable[[Any], Any]:
    """Register the decorated coroutine as the handler of `request_type`; with `session`,
    it gets the resolved session record as its third argument; with `waits`, it awaits
    something slow (see WAITING)."""
    def register(fn: Callable[..., Awaitable[Reply]]) -> Callable[..., Awaitable[Reply]]:
        if request_type in HANDLERS:
            raise RuntimeError(f"two handlers for {request_type.__name__}")
        if waits:
            WAITING.add(request_type)
        if session:
            async def with_session(services: "Services", req: Any) -> Reply:
                return await fn(services, req, services.store.session(req.session))
            HANDLERS[request_type] = with_session
        else:
            HANDLERS[request_type] = fn
        return fn
    return register
