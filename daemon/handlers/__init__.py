"""Request handlers, one module per family; importing this package registers them all."""

from . import context, files, history, meta, sessions, state, turns  # noqa: F401  (registration)
from .registry import HANDLERS, RequestError, handles

__all__ = ["HANDLERS", "RequestError", "handles"]
