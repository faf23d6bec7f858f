"""The front door's limits on what any client may hold: open connections (a cap that always
leaves descriptors for the ZeroMQ sockets, the store and the model servers), idle and
half-sent connections (closed after `http_idle_timeout`), a request body that trickles in
(`http_body_timeout`), and the log lines that bad requests cause (one a source per interval,
without a traceback)."""

import asyncio
import logging
import resource
import time
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

log = logging.getLogger(__name__)
#: Descriptors kept free for everything but HTTP connections.
RESERVED_DESCRIPTORS = 256
#: What a connection over the cap is told before it is closed.
_BUSY_BODY = b'{"error": "ctxkeepd has too many open HTTP connections: retry in a moment"}\n'
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(_BUSY_BODY)) + _BUSY_BODY


def connection_cap(configured: int) -> int:
    """The most HTTP connections held at once: the configured number, or fewer when the
    descriptor limit would leave less than RESERVED_DESCRIPTORS for the rest."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(configured, soft - RESERVED_DESCRIPTORS))


#: Of the TCP cap, the slots a connection that has not shown the token never takes: past
#: them, the oldest such connection is closed to make room (a local user holding idle
#: connections never locks out the token's holders).
TRUSTED_SLOTS = 0.25


class ConnectionCap:
    """Per listener: the Unix socket (the user's own) and TCP each hold at most `cap`
    connections, never sharing one; past the cap a new connection is answered 503 and
    closed. Over TCP, a connection that has not shown the token is closed first: once the
    TCP connections pass the cap less its TRUSTED_SLOTS, the oldest of those is closed to
    make room, so the last slots are only ever taken by clients with the token. (Wraps the
    aiohttp Server's `connection_made` and `connection_lost`.)"""

    def __init__(self, server: web.Server, cap: int, throttle: "Throttle") -> None:
        self.server, self.cap, self.throttle = server, cap, throttle
        self.refused = 0
        #: The open connections of each listener, oldest first, and those that showed the token.
        self.unix: dict[Any, None] = {}
        self.tcp: dict[Any, None] = {}
        self.trusted: set[Any] = set()
        self._made, self._lost = server.connection_made, server.connection_lost
        server.connection_made = self.connection_made  # type: ignore[method-assign]
        server.connection_lost = self.connection_lost  # type: ignore[method-assign]

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        self._made(handler, transport)
        peer = transport.get_extra_info("peername")
        over_tcp = isinstance(peer, tuple)
        held = self.tcp if over_tcp else self.unix
        held[handler] = None
        if over_tcp and len(held) > self.cap * (1 - TRUSTED_SLOTS):
            self._evict_untrusted(handler)
        if len(held) > self.cap:
            self._refuse(transport, peer, "TCP" if over_tcp else "the Unix socket")

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        self.unix.pop(handler, None)
        self.tcp.pop(handler, None)
        self.trusted.discard(handler)
        self._lost(handler, exc)

    def trust(self, handler: Any) -> None:
        """The connection showed the token: it is never closed to make room."""
        self.trusted.add(handler)

    def _evict_untrusted(self, newcomer: Any) -> None:
        """Close the oldest TCP connection that has not shown the token (not `newcomer`)."""
        for handler in self.tcp:
            if handler is not newcomer and handler not in self.trusted:
                transport = getattr(handler, "transport", None)
                self.tcp.pop(handler, None)
                if transport is not None:
                    transport.write(BUSY)
                    transport.close()
                return

    def _refuse(self, transport: asyncio.Transport, peer: Any, where: str) -> None:
        self.refused += 1
        if self.throttle.allow(f"cap|{where}"):
            log.warning("HTTP: %d connections open on %s, the cap (http_max_connections): refused %s "
                        "(%d refused so far)", self.cap, where, peer or "a client", self.refused)
        transport.write(BUSY)
        transport.close()


class Throttle(logging.Filter):
    """At most one log line per key (the message and its source) per `interval` seconds,
    and no tracebacks for requests that were malformed (they say nothing about ctxkeepd)."""

    def __init__(self, interval: float = 60.0, keys: int = 1024) -> None:
        super().__init__()
        self.interval, self.keys = interval, keys
        self.last: dict[str, float] = {}

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        if now - self.last.get(key, -self.interval) < self.interval:
            return False
        if len(self.last) >= self.keys:  # many sources: forget the oldest
            self.last = {k: t for k, t in self.last.items() if now - t < self.interval}
            if len(self.last) >= self.keys:
                return False
        self.last[key] = now
        return True

    def filter(self, record: logging.LogRecord) -> bool:
        source = str(record.args[0]) if isinstance(record.args, tuple) and record.args else ""
        if not self.allow(f"{record.msg}|{source}"):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg = f"{record.msg}: malformed request ({exc.message or type(exc).__name__})"
            record.exc_info, record.levelno, record.levelname = None, logging.WARNING, "WARNING"
        return True


def request_logger() -> logging.Logger:
    """The logger aiohttp reports request errors to, throttled."""
    logger = logging.getLogger("ctxkeep.daemon.transports.http.requests")
    if not any(isinstance(f, Throttle) for f in logger.filters):
        logger.addFilter(Throttle())
    return logger


async def read_body(request: web.Request, timeout: float) -> bytes:
    """The request's body (kept by aiohttp for the handler's own `read`), or 408 when it does
    not arrive within `timeout` seconds."""
    try:
        async with asyncio.timeout(timeout):
            return await request.read()
    except TimeoutError:
        raise web.HTTPRequestTimeout(text='{"error": "the request body did not arrive in time"}',
                                     content_type="application/json") from None
