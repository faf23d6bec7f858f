"""The event socket: numbered events out, subscriptions in.

An XPUB, so the daemon sees each new subscription and greets it with a
`daemon.status` event (which also tells the subscriber its subscription is
live). Every event gets the next per-daemon sequence number. The send
high-water mark is raised, and the text of a generation is batched upstream,
because a PUB socket drops silently when a subscriber's queue is full.
"""

import asyncio
import logging
import time
from collections.abc import Callable

import zmq
import zmq.asyncio

from ..protocol import encode, subjects
from ..protocol.events import DaemonStatusEvent, Event
from ..protocol.models import DaemonStatus

log = logging.getLogger(__name__)


#: The longest subscription prefix (topics are `<subject>/<session id>`, under 60 bytes).
MAX_PREFIX_BYTES = 256


class EventBus:
    """Publishes events on the XPUB socket."""

    def __init__(self, context: zmq.asyncio.Context, hwm: int,
                 status: Callable[[], DaemonStatus], max_subscriptions: int = 4096) -> None:
        self.context = context
        self.hwm = hwm
        self.sockets: list[zmq.asyncio.Socket] = []
        self.last_seq = 0
        self._status = status
        self.max_subscriptions = max_subscriptions
        self._subscriptions: dict[bytes, int] = {}
        self._total = 0
        self._refusal_logged: dict[str, float] = {}

    def bind(self, endpoint: str, fd: int | None = None,
             secure: Callable[[zmq.Socket], None] | None = None) -> None:
        """Publish on one more endpoint (an adopted listening socket when `fd` is given)."""
        sock = self.context.socket(zmq.XPUB)
        sock.setsockopt(zmq.SNDHWM, self.hwm)
        # Subscriptions are applied by the daemon (serve_subscriptions), so that a prefix
        # too long, or one too many, costs nothing; every (un)subscription is seen.
        sock.setsockopt(zmq.XPUB_MANUAL, 1)
        sock.setsockopt(zmq.XPUB_VERBOSER, 1)
        sock.setsockopt(zmq.LINGER, 500)
        if fd is not None:
            sock.setsockopt(zmq.USE_FD, fd)
        if secure is not None:
            secure(sock)
        sock.bind(endpoint)
        self.sockets.append(sock)

    def publish(self, event: Event, session_id: str = "") -> Event:
        """Number, stamp and send an event on topic `<subject>/<session_id>`."""
        self.last_seq += 1
        event.seq = self.last_seq
        event.time = time.time()
        if session_id:
            event.session_id = session_id
        tag = type(event).__struct_config__.tag
        topic = subjects.topic(tag, event.session_id)  # type: ignore[arg-type]
        frames = [topic.encode(), encode(event)]
        for sock in self.sockets:
            try:
                sent = sock.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.ZMQError as exc:
                self._failed(tag, event.seq, exc)
                continue
            if isinstance(sent, asyncio.Future):  # zmq.asyncio reports failures on the future
                sent.add_done_callback(lambda f, tag=tag, seq=event.seq: self._failed(
                    tag, seq, f.exception()) if not f.cancelled() and f.exception() else None)
        return event

    def _failed(self, tag: str, seq: int, exc: BaseException | None) -> None:
        log.warning("event %s #%d not sent: %s", tag, seq, exc)

    async def serve_subscriptions(self, sock: zmq.asyncio.Socket) -> None:
        """Apply each subscription within the limits, and greet it with the daemon's status;
        apply each unsubscription (ZeroMQ sends them too for a subscriber that left, whose
        subscriptions it has already dropped)."""
        while True:
            frame = await sock.recv()
            kind, prefix = frame[:1], frame[1:]
            if kind == b"\x00":
                sock.setsockopt(zmq.UNSUBSCRIBE, prefix)
                if self._subscriptions.get(prefix):
                    self._subscriptions[prefix] -= 1
                    self._total -= 1
                continue
            if kind != b"\x01":
                continue
            refusal = self._refusal(prefix)
            if refusal:
                self._log_refusal(refusal)
                continue
            sock.setsockopt(zmq.SUBSCRIBE, prefix)
            self._subscriptions[prefix] = self._subscriptions.get(prefix, 0) + 1
            self._total += 1
            log.debug("new subscription to %r", prefix.decode(errors="replace"))
            self.publish(DaemonStatusEvent(status=self._status()))

    def _refusal(self, prefix: bytes) -> str:
        if len(prefix) > MAX_PREFIX_BYTES:
            return f"a subscription prefix of {len(prefix):,} bytes (at most {MAX_PREFIX_BYTES})"
        if self._total >= self.max_subscriptions:
            return f"a subscription past the limit of {self.max_subscriptions:,} at once (max_subscriptions)"
        return ""

    def _log_refusal(self, refusal: str) -> None:
        """Log a refusal, each kind at most once a second (a flood must not flood the log)."""
        kind = refusal.split(" of ")[0]
        now = time.monotonic()
        if now - self._refusal_logged.get(kind, float("-inf")) >= 1.0:
            log.warning("refused %s: the subscriber gets no greeting and no events for it", refusal)
            self._refusal_logged[kind] = now

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
