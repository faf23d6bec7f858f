"""Request handlers, one module per family; importing this package registers them all."""

from ctxkeep.daemon.handlers import (  # noqa: F401  (importing registers the handlers)
    alternative,
    branch,
    compact,
    edit,
    files,
    history,
    images,
    imports,
    memory,
    meta,
    models,
    pull,
    regenerate,
    search,
    sessions,
    state,
    turns,
    usage,
)
from ctxkeep.daemon.handlers.registry import HANDLERS, LOCAL, Caller, RequestError, handles

__all__ = ["Caller", "HANDLERS", "LOCAL", "RequestError", "handles"]
