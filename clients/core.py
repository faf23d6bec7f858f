"""What the sync and asyncio clients share: request ids, reply checks, event gaps."""

import fcntl
import itertools
import os
from pathlib import Path
from typing import TypeVar

import msgspec
import zmq

from ..protocol import ErrorCode, decode_event, decode_reply, paths, requests, subjects
from ..protocol.events import Event, GenerationError, ResponseGeneration
from ..protocol.replies import Error, Reply
from ..protocol.requests import Request
from .errors import CtxkeepError, DaemonNotAnswering, DaemonUnavailable

R = TypeVar("R", bound=Reply)


#: How long a client waits on past its timeout for a daemon that is running but slow, when
#: the request may already be under way (one that changes something).
PATIENCE_S = 60.0
#: Requests that only read: one that got no answer did nothing, and is not waited on.
READING = (requests.Hello, requests.Ping, requests.Status, requests.SessionList,
           requests.SessionGet, requests.History, requests.Usage, requests.Files,
           requests.GoalsGet, requests.SnapshotList, requests.ModelsList, requests.Search)


def patience(request: Request, timeout: float, endpoint: str) -> float:
    """Seconds more to wait for a request past its timeout: none for one that only reads,
    or when no daemon runs; else PATIENCE_S (the daemon runs: it is only slow)."""
    if isinstance(request, READING) or running_daemon(endpoint) is None:
        return 0.0
    return max(timeout, PATIENCE_S)


def running_daemon(endpoint: str) -> int | None:
    """The pid of the ctxkeepd holding the lock beside an ipc:// endpoint's socket (a daemon
    runs there, whether or not it answers), or None: no daemon holds it, or the endpoint
    is not local (TCP)."""
    path = paths.ipc_path(endpoint)
    if path is None:
        return None
    try:
        fd = os.open(Path(path).parent / "ctxkeepd.lock", os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # held: by a running daemon, whose pid the file holds
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def unanswered(request: Request) -> str:
    """What a request with no answer may still have done (for the error's message)."""
    if isinstance(request, requests.Send):
        return ("; the message may have been received and stored all the same: "
                f"`ctxkeep show {request.session} --last 2` tells")
    return ""


def no_answer(endpoint: str, waited: float, what: str = "") -> DaemonUnavailable:
    """The error for a request that got no answer: a running daemon that is slow, or none."""
    pid = running_daemon(endpoint)
    if pid is not None:
        return DaemonNotAnswering(endpoint, pid, waited, what)
    return DaemonUnavailable(endpoint, f"no answer in {waited:g} s")


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


def open_dealer(context: zmq.Context, endpoint: str) -> zmq.Socket:
    """A DEALER socket to the daemon's control endpoint (CURVE where it is TCP), for a
    sync or an asyncio context alike."""
    from .curve_keys import secure
    check_reachable(endpoint)
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    secure(sock, endpoint)
    sock.connect(endpoint)
    return sock


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


#: How a turn ends: its answer, or the error that ended it (cancelled, interrupted, failed).
TurnEnd = ResponseGeneration | GenerationError


def of_turn(event: Event, generation_id: str) -> bool:
    """Whether an event belongs to the generation `generation_id`."""
    return getattr(event, "generation_id", None) == generation_id


def ends_turn(event: Event) -> bool:
    """Whether an event is a generation's terminal one (each generation has exactly one)."""
    return isinstance(event, (ResponseGeneration, GenerationError))

