"""The handler registry: one coroutine per request type."""

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol.replies import Reply
from ctxkeep.protocol.requests import Request

if TYPE_CHECKING:
    from ctxkeep.daemon.server.daemon import Daemon

__all__ = ["HANDLERS", "REMOTE", "RequestError", "handles"]

R = TypeVar("R", bound=Request)
Handler = Callable[["Daemon", Any], Awaitable[Reply]]

#: True while handling a request that came over TCP (a remote client).
REMOTE: ContextVar[bool] = ContextVar("remote", default=False)

#: Request class -> handler. Filled by the @handles decorators of this package's modules.
HANDLERS: dict[type[Request], Handler] = {}


def handles(request_type: type[R]) -> Callable[[Callable[["Daemon", R], Awaitable[Reply]]],
                                                  Callable[["Daemon", R], Awaitable[Reply]]]:
    """Register the decorated coroutine as the handler of `request_type`."""
    def register(fn: Callable[["Daemon", R], Awaitable[Reply]]):
        if request_type in HANDLERS:
            raise RuntimeError(f"two handlers for {request_type.__name__}")
        HANDLERS[request_type] = fn
        return fn
    return register
