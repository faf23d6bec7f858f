"""The front door opens on its first caller: the HTTP sockets are bound when the daemon
opens (listeners.py), but the server's modules (aiohttp and the APIs, ~0.2 s of CPU) are
imported and started only once a client connects. A daemon driven only over ZeroMQ never
pays for them; the first HTTP client waits in the backlog while they load, once."""

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Protocol

from ctxkeep.daemon.transports.http.listeners import Listeners

log = logging.getLogger(__name__)


class Door(Protocol):
    """What opens on the first caller and is closed on the way out."""

    async def close(self) -> None: ...


class OnFirstCaller:
    """Watches the bound listeners until a connection waits on one, then opens the door
    (`open_door`, once) and hands the sockets to it."""

    def __init__(self, listeners: Listeners, open_door: Callable[[], Coroutine[object, object, Door]]) -> None:
        self.listeners = listeners
        self._open_door = open_door
        self._watched: list[int] = []
        self.opening: asyncio.Task[Door] | None = None

    def watch(self) -> None:
        """Start watching (on the running loop)."""
        loop = asyncio.get_running_loop()
        for sock in self.listeners.sockets():
            loop.add_reader(sock.fileno(), self._knocked)
            self._watched.append(sock.fileno())

    def _unwatch(self) -> None:
        loop = asyncio.get_running_loop()
        for fd in self._watched:
            loop.remove_reader(fd)
        self._watched = []

    def _knocked(self) -> None:
        """A client connected: stop watching (the door's server takes the sockets) and open."""
        self._unwatch()
        if self.opening is None:
            self.opening = asyncio.create_task(self._open_door(), name="http-front-door")
            self.opening.add_done_callback(self._opened)

    def _opened(self, task: "asyncio.Task[Door]") -> None:
        """A door that could not open closes the listeners: its callers are refused, not
        left waiting in the backlog."""
        if not task.cancelled() and task.exception() is not None:
            log.error("the HTTP front door could not open: %s: HTTP clients are refused; "
                      "restart ctxkeepd (`ctxkeep daemon restart`)", task.exception())
            self.listeners.close()

    async def close(self) -> None:
        """Stop watching; close the door if it opened (after its opening ends)."""
        self._unwatch()
        if self.opening is None:
            return
        try:
            door = await self.opening
        except Exception:  # told when it failed (_opened)
            return
        await door.close()
