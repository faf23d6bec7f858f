"""What the sync and asyncio clients share: request ids, reply checks, event gaps."""

import itertools
import os

import zmq
from pathlib import Path
from typing import TypeVar

import msgspec

from ..protocol import ErrorCode, decode_event, decode_reply, paths, subjects
from ..protocol.errors import CodedError
from ..protocol.events import Event
from ..protocol.replies import Error, Reply
from ..protocol.requests import Request

R = TypeVar("R", bound=Reply)


class CtxkeepError(CodedError):
    """The daemon answered with an error (or could not be reached)."""


class DaemonUnavailable(CtxkeepError):
    """No daemon answers on the control endpoint."""

    def __init__(self, endpoint: str, why: str) -> None:
        super().__init__("daemon_unavailable",
                         f"ctxkeepd is not running ({why} at {endpoint}): start it with "
                         "`ctxkeep daemon run` (or `ctxkeepd &`)")


def endpoints(control: str | None, events: str | None) -> tuple[str, str]:
    """The endpoints to use: given ones, else the environment's, else the XDG defaults."""
    return control or paths.control_endpoint(), events or paths.events_endpoint()


def check_reachable(endpoint: str) -> None:
    """Fail fast with a clear message when an ipc:// socket file is missing."""
    path = paths.ipc_path(endpoint)
    if path is not None and not Path(path).exists():
        raise DaemonUnavailable(endpoint, "no socket")


class RequestIds:
    """Client-chosen request ids, unique within this process."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._prefix = f"{os.getpid():x}-"

    def stamp(self, request: Request) -> Request:
        if not request.id:
            request.id = f"{self._prefix}{next(self._counter)}"
        return request


def read_reply(frame: bytes) -> Reply:
    """Decode a reply frame (an unreadable one becomes an `internal` Error reply)."""
    try:
        return decode_reply(frame)
    except (msgspec.DecodeError, ValueError) as exc:
        return Error(code=ErrorCode.INTERNAL.value, message=f"unreadable reply from the daemon: {exc}")


def unwrap(reply: Reply, expect: type[R]) -> R:
    """The reply as the expected type; an `error` reply raises CtxkeepError."""
    if isinstance(reply, Error):
        raise CtxkeepError(reply.code, reply.message)
    if not isinstance(reply, expect):
        raise CtxkeepError(ErrorCode.INTERNAL.value,
                           f"expected a {expect.__name__} reply, got {type(reply).__name__}")
    return reply


class GapTracker:
    """Notices missed events from their sequence numbers (for a subscriber to everything)."""

    def __init__(self) -> None:
        self.last_seq = 0
        self.missed = 0

    def see(self, event: Event) -> int:
        """Record an event; returns how many events were missed just before it."""
        gap = event.seq - self.last_seq - 1 if self.last_seq else 0
        if event.seq < self.last_seq:  # the daemon restarted: numbering begins again
            gap = 0
        self.last_seq = event.seq
        if gap > 0:
            self.missed += gap
        return max(gap, 0)


def read_event(frames: list[bytes]) -> tuple[str, Event] | None:
    """(topic, event) from a published message, or None for unknown or malformed ones."""
    if len(frames) != 2:
        return None
    try:
        event = decode_event(frames[1])
    except (msgspec.DecodeError, ValueError):
        return None
    return (frames[0].decode(errors="replace"), event) if event is not None else None


def open_subscriber(sock: zmq.Socket | None, context: zmq.Context, endpoint: str,
                    prefixes: tuple[str, ...]) -> zmq.Socket:
    """A SUB socket (new, or `sock`) subscribed to `prefixes` (default: everything) and to
    `daemon.status` when they do not cover it, so the daemon's greeting comes through."""
    check_reachable(endpoint)
    if sock is None:
        from .curve_keys import secure
        sock = context.socket(zmq.SUB)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, 100_000)
        secure(sock, endpoint)
        sock.connect(endpoint)
    prefixes = prefixes or ("",)
    for prefix in prefixes:
        sock.subscribe(prefix.encode())
    if not any(subjects.DAEMON_STATUS.startswith(p) for p in prefixes):
        sock.subscribe(subjects.DAEMON_STATUS.encode())
    return sock
