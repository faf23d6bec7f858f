"""The event sockets: the engine's events out, subscriptions in.

An XPUB, so the daemon sees each new subscription and greets it with a
`daemon.status` event (which also tells the subscriber its subscription is
live). It listens to the engine's event bus and sends each event, numbered
there, on topic `<subject>/<session_id>`; a subscriber whose queue overflowed
(ZeroMQ drops, it does not block) sees the gap in the numbers.

A subscriber's queue is bounded in bytes: ZeroMQ counts messages, so the
high-water mark is `event_buffer_bytes` divided by the size of a token batch
(`EVENT_UNIT_BYTES`, the largest event of a stream; see batcher.py).
"""

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable

import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from ctxkeep.daemon.events.batcher import MAX_BATCH_BYTES
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.transports.zmq.inbox import Inbox
from ctxkeep.daemon.transports.zmq.memory import release_free_memory
from ctxkeep.daemon.transports.zmq.subscriptions import CUT_AFTER_REFUSALS, MAX_PREFIX_BYTES, SubscriptionLedger
from ctxkeep.protocol import encode, subjects
from ctxkeep.protocol.events import DaemonStatusEvent, Event
from ctxkeep.protocol.requests import tag_of
from ctxkeep.protocol.structs import DaemonStatus

log = logging.getLogger(__name__)

__all__ = ["EventPublisher", "MAX_PREFIX_BYTES", "EVENT_UNIT_BYTES", "high_water_mark"]

#: The largest message a CURVE subscriber may send (its handshake's INITIATE is ~300 bytes).
CURVE_MAX_MESSAGE = 1024
#: Departed subscriptions after which freed memory is given back (normal clients hold a few).
TRIM_AFTER = 32
#: What one queued event is counted as: a full token batch and its envelope.
EVENT_UNIT_BYTES = MAX_BATCH_BYTES + 512


def high_water_mark(buffer_bytes: int) -> int:
    """The per-subscriber queue length (in events) that `buffer_bytes` allows."""
    return max(1, buffer_bytes // EVENT_UNIT_BYTES)


class EventPublisher:
    """Sends the bus's events on XPUB sockets and serves their subscriptions."""

    def __init__(self, context: zmq.asyncio.Context, bus: EventBus, buffer_bytes: int,
                 status: Callable[[], DaemonStatus], max_subscriptions: int = 4096,
                 max_per_client: int = 256) -> None:
        self.context = context
        self.bus = bus
        self.hwm = high_water_mark(buffer_bytes)
        self.sockets: list[zmq.asyncio.Socket] = []
        #: Each socket read and written without zmq.asyncio's futures: a manual XPUB applies
        #: a subscription to the connection of the message read last, and zmq.asyncio
        #: touches the socket after each read (which may process a departed subscriber's
        #: end and forget that connection, so the subscription went nowhere).
        self._inboxes: dict[zmq.asyncio.Socket, Inbox] = {}
        self._status = status
        self.ledger = SubscriptionLedger(max_subscriptions, max_per_client)
        self._monitors: dict[zmq.asyncio.Socket, zmq.asyncio.Socket] = {}
        #: Each socket's monitor, read without futures (as `_inboxes`): an event is applied in
        #: the same step that reads it. An announcement read through a future waited for its
        #: task's next turn, and a newcomer's subscriptions read in between were counted
        #: before it, and then forgotten by it as a stale connection's (test_publisher_connections).
        self._monitor_inboxes: dict[zmq.asyncio.Socket, Inbox] = {}
        #: Each socket's connections (descriptors) that are open, as its monitor reports.
        self._live: dict[zmq.asyncio.Socket, set[int]] = {}
        #: Subscriptions released by departed subscribers since the last trim, and the trim due.
        self._freed = 0
        self._trim: asyncio.TimerHandle | None = None
        self._refusal_logged: dict[str, float] = {}
        self._stop_listening = bus.listen(self.send)

    def bind(self, endpoint: str, fd: int | None = None,
             secure: Callable[[zmq.Socket], None] | None = None) -> None:
        """Publish on one more endpoint (an adopted listening socket when `fd` is given)."""
        sock = self.context.socket(zmq.XPUB)
        sock.setsockopt(zmq.SNDHWM, self.hwm)
        # Subscriptions are applied by the daemon (serve_subscriptions), so that a prefix
        # too long, or one too many, costs nothing; every (un)subscription is seen.
        sock.setsockopt(zmq.XPUB_MANUAL, 1)
        sock.setsockopt(zmq.XPUB_VERBOSER, 1)
        # A subscription message is its prefix and one byte: a larger one (a hostile or
        # broken subscriber) drops its connection before libzmq keeps a copy of it. The
        # cap covers the handshake's messages too, which CURVE's make larger.
        sock.setsockopt(zmq.MAXMSGSIZE, 1 + MAX_PREFIX_BYTES if secure is None else CURVE_MAX_MESSAGE)
        sock.setsockopt(zmq.LINGER, 500)
        if fd is not None:
            sock.setsockopt(zmq.USE_FD, fd)
        if secure is not None:
            secure(sock)
        # The monitor says when a connection ends, so that its own count is forgotten.
        self._monitors[sock] = sock.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self._monitor_inboxes[sock] = Inbox(self._monitors[sock])
        sock.bind(endpoint)
        self.sockets.append(sock)
        self._inboxes[sock] = Inbox(sock)

    def send(self, event: Event) -> None:
        """Send a published event on topic `<subject>/<session_id>` (never blocks)."""
        tag = tag_of(type(event))
        topic = subjects.topic(tag, event.session_id)
        frames = [topic.encode(), encode(event)]
        for sock in self.sockets:
            try:
                self._inboxes[sock].send(frames)
            except zmq.ZMQError as exc:
                self._failed(tag, event.seq, exc)

    def _failed(self, tag: str, seq: int, exc: BaseException | None) -> None:
        log.warning("event %s #%d not sent: %s", tag, seq, exc)

    async def serve_subscriptions(self, sock: zmq.asyncio.Socket) -> None:
        """Apply each subscription within the limits and greet it with the daemon's status;
        apply each unsubscription (ZeroMQ sends them too for a subscriber that left, whose
        subscriptions it has already dropped). Connection ends are taken in first, so a
        descriptor reused by a new connection never inherits the old one's count."""
        inbox = self._inboxes[sock]
        try:
            await self._serve_subscriptions(sock, inbox)
        finally:
            inbox.close()

    async def _serve_subscriptions(self, sock: zmq.asyncio.Socket, inbox: Inbox) -> None:
        while True:
            (frame,) = await inbox.receive(copy=False)
            # From here to setsockopt nothing may touch `sock` (see _inboxes).
            for event in self._monitor_inboxes[sock].take_queued():
                self._connection_event(sock, event)
            data = frame.bytes
            kind, prefix = data[:1], data[1:]
            client = self._client(sock, frame)
            if kind == b"\x01" and client is None:
                client = (id(sock), -1)
            if kind == b"\x00":
                sock.setsockopt(zmq.UNSUBSCRIBE, prefix)
                self.ledger.remove(client, prefix)
                if client is None:  # a subscriber left: what libzmq held for it was freed
                    self._released()
                continue
            if kind != b"\x01":
                continue
            refusal = self.ledger.refusal(client, prefix)
            hog = self.ledger.hog(client) if refusal.endswith("(max_subscriptions)") else None
            if hog is not None and self._cut(sock, hog[1], "to make room for another client"):
                refusal = ""  # its subscriptions are released as ZeroMQ drops them
            if refusal:
                self._log_refusal(refusal)
                if self.ledger.refused(client) and client is not None:
                    self._cut(sock, client[1])
                continue
            sock.setsockopt(zmq.SUBSCRIBE, prefix)
            self.ledger.add(client, prefix)
            log.debug("new subscription to %r from %s (%d held in all)",
                      prefix.decode(errors="replace"), client, self.ledger.total)
            self.bus.publish(DaemonStatusEvent(status=self._status()))

    async def serve_connections(self, sock: zmq.asyncio.Socket) -> None:
        """Forget each connection that ends (also done before each subscription)."""
        inbox = self._monitor_inboxes[sock]
        try:
            while True:
                self._connection_event(sock, await inbox.receive())
        finally:
            inbox.close()

    def _connection_event(self, sock: zmq.asyncio.Socket, frames: list[bytes]) -> None:
        event = parse_monitor_message(frames)
        fd = int(event["value"])
        live = self._live.setdefault(sock, set())
        if event["event"] == zmq.EVENT_ACCEPTED:
            live.add(fd)
        else:
            live.discard(fd)
        # An accepted descriptor is a new connection: anything left under it is stale.
        self.ledger.client_left((id(sock), fd))

    def _released(self) -> None:
        """Once a departure's prefixes stop coming (a second later), give what was freed
        back to the system, when it was much."""
        self._freed += 1
        if self._freed < TRIM_AFTER or self._trim is not None:
            return

        def trim() -> None:
            self._trim, self._freed = None, 0
            release_free_memory()
        self._trim = asyncio.get_running_loop().call_later(1.0, trim)

    def _cut(self, sock: zmq.asyncio.Socket, fd: int, why: str = "") -> bool:
        """Close the connection on `fd` (one that kept subscribing past the limits, or holds
        the most when the total is reached): libzmq then ends it as if the subscriber had
        left, releasing all it held for it. Only a descriptor the monitor says is still that
        connection is touched; the daemon's own copy of it is shut down, never libzmq's
        closed. Returns whether it was closed."""
        if fd not in self._live.get(sock, ()):
            return False
        held = self.ledger.held_by((id(sock), fd))
        try:
            with socket.socket(fileno=os.dup(fd)) as conn:
                conn.shutdown(socket.SHUT_RDWR)
        except OSError as exc:
            log.debug("could not close subscriber connection %d: %s", fd, exc)
            return False
        self._live[sock].discard(fd)
        self.ledger.client_left((id(sock), fd))
        self._log_refusal(f"closed an event subscriber's connection holding {held:,} subscriptions "
                          f"{why or f'(it kept subscribing past the limits: {CUT_AFTER_REFUSALS} refused)'} (cut)")
        return True

    @staticmethod
    def _client(sock: zmq.asyncio.Socket, frame: zmq.Frame) -> tuple[int, int] | None:
        """The connection a subscription came from; None for the unsubscriptions ZeroMQ
        makes itself when a subscriber leaves (they carry no descriptor)."""
        try:
            return (id(sock), frame.get(zmq.SRCFD))
        except zmq.ZMQError:
            return None

    def _log_refusal(self, refusal: str) -> None:
        """Log a refusal (or a cut), each kind at most once a second (a flood must not flood
        the log); its kind is its last parenthesis."""
        kind = refusal.rsplit("(", 1)[-1]
        now = time.monotonic()
        if now - self._refusal_logged.get(kind, float("-inf")) >= 1.0:
            log.warning("%s", refusal if kind == "cut)" else
                        f"refused {refusal}: the subscriber gets no greeting and no events for it")
            self._refusal_logged[kind] = now

    def close(self) -> None:
        self._stop_listening()
        for sock in self.sockets:
            sock.disable_monitor()
            self._monitors[sock].close()
            sock.close()
