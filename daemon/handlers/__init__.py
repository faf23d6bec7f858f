"""Request handlers, one module per family; importing this package registers them all."""

from ctxkeep.daemon.handlers import context
from ctxkeep.daemon.handlers import files
from ctxkeep.daemon.handlers import history
from ctxkeep.daemon.handlers import meta
from ctxkeep.daemon.handlers import sessions
from ctxkeep.daemon.handlers import state
from ctxkeep.daemon.handlers import turns  # noqa: F401  (registration)
from ctxkeep.daemon.handlers.registry import HANDLERS, RequestError, handles

__all__ = ["HANDLERS", "RequestError", "handles"]
