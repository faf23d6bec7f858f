"""Clients of ctxkeepd: a Python client library (sync and asyncio), the CLI and the GUI.

`AsyncClient` is imported on first use, so that the blocking client and the CLI do not
pay for importing asyncio.
"""

from typing import TYPE_CHECKING, Any

from .core import CtxkeepError, DaemonUnavailable
from .sync import Client

if TYPE_CHECKING:
    from .aio import AsyncClient

__all__ = ["AsyncClient", "Client", "CtxkeepError", "DaemonUnavailable"]


def __getattr__(name: str) -> Any:
    if name == "AsyncClient":
        from .aio import AsyncClient
        return AsyncClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
