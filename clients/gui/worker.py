"""The one thread that talks to the daemon: a DEALER for requests, a SUB for events.

The UI never touches a socket. It calls `submit()` (thread-safe) and gets
replies, events and connection changes back as Qt signals, delivered in the
UI thread. Without a daemon it keeps trying every second and says so.
"""

import queue
import time

from PySide6.QtCore import QThread, Signal

from ...protocol.events import DaemonStatusEvent
from ...protocol.requests import Ping, Request
from ..core import CtxkeepError, DaemonUnavailable
from ..sync import Client

RETRY_S = 1.0
PING_EVERY_S = 2.0
#: How long a request may wait for its reply before the daemon counts as gone: above what
#: docs/performance.md measures for the slowest request (paging a 100,000-message session's
#: active context the first time, under a second) with room for a loaded machine.
REQUEST_TIMEOUT_S = 10.0


class DaemonWorker(QThread):
    """Owns the client; everything it hears becomes a signal."""

    #: (topic, event): an event heard (not `event`, which is QObject's own event handler)
    heard = Signal(str, object)
    #: (the request, its reply)
    reply = Signal(object, object)
    #: (the request, the error message)
    failed = Signal(object, str)
    #: (connected, message): message says how to start the daemon when not connected
    connection = Signal(bool, str)

    def __init__(self, control: str | None = None, events: str | None = None) -> None:
        super().__init__()
        self.control, self.events_endpoint = control, events
        self._outbox: "queue.Queue[Request]" = queue.Queue()
        self.connected = False

    def submit(self, request: Request) -> None:
        """Send a request from any thread; the answer comes as `reply` or `failed`. While
        the daemon is away a request fails at once: nothing is kept to be sent later
        without the user knowing."""
        if not self.connected:
            self.failed.emit(request, "not connected to ctxkeepd")
            return
        self._outbox.put(request)

    def _fail_queued(self, why: str) -> None:
        while True:
            try:
                self.failed.emit(self._outbox.get_nowait(), why)
            except queue.Empty:
                return

    def stop(self) -> None:
        self.requestInterruption()
        self.wait(5000)

    def _set(self, connected: bool, message: str) -> None:
        if connected != self.connected or not connected:
            self.connected = connected
            self.connection.emit(connected, message)

    def run(self) -> None:
        client: Client | None = None
        last_contact = time.monotonic()
        while not self.isInterruptionRequested():
            if client is None:
                try:
                    client = Client(self.control, self.events_endpoint, timeout=REQUEST_TIMEOUT_S)
                    client.subscribe("")
                    self._set(True, "")
                    last_contact = time.monotonic()
                except DaemonUnavailable as exc:
                    if client is not None:
                        client.close()
                    client = None
                    self._set(False, str(exc))
                    self.msleep(int(RETRY_S * 1000))
                    continue
            try:
                item = client.next_event(timeout=0.05)
                while item is not None:
                    last_contact = time.monotonic()
                    topic, event = item
                    if isinstance(event, DaemonStatusEvent) and event.stopping:
                        raise DaemonUnavailable(client.control, "the daemon is stopping")
                    self.heard.emit(topic, event)
                    item = client.next_event(timeout=0)
                while True:
                    try:
                        request = self._outbox.get_nowait()
                    except queue.Empty:
                        break
                    try:
                        self.reply.emit(request, client.request(request))
                    except DaemonUnavailable:
                        self.failed.emit(request, f"ctxkeepd did not answer in {REQUEST_TIMEOUT_S:.0f} s")
                        raise
                    except CtxkeepError as exc:
                        self.failed.emit(request, str(exc))
                    last_contact = time.monotonic()
                if time.monotonic() - last_contact > PING_EVERY_S:
                    client.request(Ping())
                    last_contact = time.monotonic()
            except DaemonUnavailable as exc:
                client.close()
                client = None
                self._set(False, str(exc))
                self._fail_queued("ctxkeepd went away before it was sent")
        if client is not None:
            client.close()
