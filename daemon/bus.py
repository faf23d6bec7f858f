"""The event socket: numbered events out, subscriptions in.

An XPUB, so the daemon sees each new subscription and greets it with a
`daemon.status` event (which also tells the subscriber its subscription is
live). Every event gets the next per-daemon sequence number. The send
high-water mark is raised, and the text of a generation is batched upstream,
because a PUB socket drops silently when a subscriber's queue is full.
"""

import logging
import time
from collections.abc import Callable

import zmq
import zmq.asyncio

from ..protocol import encode, subjects
from ..protocol.events import DaemonStatusEvent, Event
from ..protocol.models import DaemonStatus

log = logging.getLogger(__name__)


class EventBus:
    """Publishes events on the XPUB socket."""

    def __init__(self, context: zmq.asyncio.Context, endpoint: str, hwm: int,
                 status: Callable[[], DaemonStatus]) -> None:
        self.socket = context.socket(zmq.XPUB)
        self.socket.setsockopt(zmq.SNDHWM, hwm)
        self.socket.setsockopt(zmq.XPUB_VERBOSE, 1)  # every subscription, even repeated ones
        self.socket.setsockopt(zmq.LINGER, 500)
        self.socket.bind(endpoint)
        self.endpoint = endpoint
        self.last_seq = 0
        self._status = status

    def publish(self, event: Event, session_id: str = "") -> Event:
        """Number, stamp and send an event on topic `<subject>/<session_id>`."""
        self.last_seq += 1
        event.seq = self.last_seq
        event.time = time.time()
        if session_id:
            event.session_id = session_id
        tag = type(event).__struct_config__.tag
        topic = subjects.topic(tag, event.session_id)  # type: ignore[arg-type]
        try:
            self.socket.send_multipart([topic.encode(), encode(event)], flags=zmq.NOBLOCK)
        except zmq.Again:  # pragma: no cover - XPUB drops rather than blocks
            log.warning("event %s #%d dropped: subscriber queue full", tag, event.seq)
        return event

    async def serve_subscriptions(self) -> None:
        """Greet every new subscription with the daemon's status."""
        while True:
            frame = await self.socket.recv()
            if frame[:1] == b"\x01":
                log.debug("new subscription to %r", frame[1:].decode(errors="replace"))
                self.publish(DaemonStatusEvent(status=self._status()))

    def close(self) -> None:
        self.socket.close()
