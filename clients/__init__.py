"""Clients of ctxkeepd: a Python client library (sync and asyncio), the CLI and the GUI."""

from .aio import AsyncClient
from .core import CtxkeepError, DaemonUnavailable
from .sync import Client

__all__ = ["AsyncClient", "Client", "CtxkeepError", "DaemonUnavailable"]
