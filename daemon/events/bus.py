"""The engine's event bus: every event numbered, stamped and handed to its listeners.

The engine publishes here and knows nothing of who listens. Each transport listens
and translates (the ZeroMQ publisher sends each event on its XPUB sockets); the
in-process tests listen to keep what was published. Every event gets the next
per-daemon sequence number, so a client whose transport dropped events sees the gap.
"""

import logging
import time
from collections.abc import Callable

from ctxkeep.protocol.events import Event

log = logging.getLogger(__name__)

__all__ = ["EventBus", "Listener"]

#: Called with each event, in order, as it is published; must not block.
Listener = Callable[[Event], None]


class EventBus:
    """Numbers events and hands each to every listener, in the order published."""

    def __init__(self) -> None:
        self.last_seq = 0
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hand every later event to `listener`; returns what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, event: Event, session_id: str = "") -> Event:
        """Number and stamp `event` (about `session_id`, when given) and hand it on. A
        listener that raises is logged and the others still get the event."""
        self.last_seq += 1
        event.seq = self.last_seq
        event.time = time.time()
        if session_id:
            event.session_id = session_id
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # one transport's fault must not stop the engine
                log.exception("an event listener failed on %s #%d",
                              type(event).__struct_config__.tag, event.seq)
        return event
