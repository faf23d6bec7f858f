"""A blocking client: requests on a DEALER, events on a SUB."""

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import zmq

from ..protocol import encode, requests
from ..protocol.events import DaemonStatusEvent, Event, SessionUpdated
from ..protocol.replies import Reply
from .calls import Calls
from .core import (
    CtxkeepError,
    GapTracker,
    RequestIds,
    TurnEnd,
    endpoints,
    ends_turn,
    no_answer,
    of_turn,
    open_dealer,
    open_subscriber,
    patience,
    read_event,
    read_reply,
    running_daemon,
    unanswered,
    unwrap,
)
from .errors import daemon_restarted, subscription_not_taken

R = TypeVar("R", bound=Reply)


class Client(Calls):
    """A connection to ctxkeepd. Use as a context manager, or call close()."""

    def __init__(self, control: str | None = None, events: str | None = None,
                 timeout: float = 10.0, context: zmq.Context | None = None) -> None:
        self.control, self.events_endpoint = endpoints(control, events)
        self.timeout = timeout
        self._context = context or zmq.Context.instance()
        self._ids = RequestIds()
        self._dealer: zmq.Socket | None = None
        self._sub: zmq.Socket | None = None
        self._stash: dict[str, Reply] = {}
        self.gaps = GapTracker()
        #: (pid, start time) of the daemon that greeted the subscription.
        self.daemon_identity: tuple[int, float] | None = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for sock in (self._dealer, self._sub):
            if sock is not None:
                sock.close(linger=0)
        self._dealer = self._sub = None

    # -- requests ---------------------------------------------------------------

    def _socket(self) -> zmq.Socket:
        if self._dealer is None:
            self._dealer = open_dealer(self._context, self.control)
        return self._dealer

    def request(self, request: requests.Request, expect: type[R] = Reply) -> R:  # type: ignore[assignment]
        """Send a request and wait for its reply; an error reply raises CtxkeepError."""
        sock = self._socket()
        self._ids.stamp(request)
        sock.send(encode(request))
        start = time.monotonic()
        deadline, patient = start + self.timeout, False
        while request.id not in self._stash:  # replies to pipelined requests wait here
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(int(left * 1000)):
                more = 0.0 if patient else patience(request, self.timeout, self.control)
                if more:  # running, only slow, and the request may be under way: wait on
                    deadline, patient = time.monotonic() + more, True
                    continue
                self.close()
                raise no_answer(self.control, round(time.monotonic() - start, 1), unanswered(request))
            reply = read_reply(sock.recv())
            self._stash[reply.id] = reply
        return unwrap(self._stash.pop(request.id), expect)

    # -- events -----------------------------------------------------------------

    def subscribe(self, *prefixes: str) -> DaemonStatusEvent:
        """Subscribe (default: to everything) and wait until the subscription is live.

        The daemon greets every subscription with `daemon.status`; that
        greeting is returned.
        """
        self._sub = open_subscriber(self._sub, self._context, self.events_endpoint, prefixes)
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            item = self.next_event(left)
            if item and isinstance(item[1], DaemonStatusEvent):
                self.daemon_identity = (item[1].status.pid, item[1].status.started)
                return item[1]
        timeout, self.timeout = self.timeout, min(self.timeout, 2.0)
        try:  # a daemon that answers requests but not the subscription: its limits
            pid = self.status().status.pid
        except CtxkeepError:
            raise no_answer(self.events_endpoint, timeout) from None
        finally:
            self.timeout = timeout
        raise subscription_not_taken(pid, timeout)

    def next_event(self, timeout: float | None = None) -> tuple[str, Event] | None:
        """The next event (topic, event), or None after `timeout` seconds."""
        assert self._sub is not None, "subscribe() first"
        if timeout is not None and not self._sub.poll(int(timeout * 1000)):
            return None
        item = read_event(self._sub.recv_multipart())
        if item is not None:
            self.gaps.see(item[1])
        return item

    def wait_event(self, quiet: float = 1.0) -> tuple[str, Event]:
        """The next event, however long it takes — but never past the daemon's end: after
        `quiet` seconds without an event the daemon is asked whether it is still the one
        that greeted the subscription. Raises DaemonUnavailable when it does not answer,
        and CtxkeepError("daemon_restarted") when another daemon answers (whatever the
        caller waited for was cut by that restart)."""
        while True:
            item = self.next_event(quiet)
            if item is not None:
                return item
            pid = running_daemon(self.control)
            if pid is not None and self.daemon_identity and pid == self.daemon_identity[0]:
                continue  # the same daemon runs (the lock says so): slow, not gone
            timeout, self.timeout = self.timeout, min(self.timeout, 2.0)
            try:
                status = self.status().status  # raises DaemonUnavailable when none answers
            finally:
                self.timeout = timeout
            if self.daemon_identity and (status.pid, status.started) != self.daemon_identity:
                raise daemon_restarted(status.pid)

    def events(self, timeout: float | None = None) -> Iterator[tuple[str, Event]]:
        """Events as they come; stops after `timeout` seconds without one (None: never)."""
        while True:
            item = self.next_event(timeout)
            if item is None:
                if timeout is not None:
                    return
                continue
            yield item

    # -- a whole turn -------------------------------------------------------------

    def turn(self, session: str, text: str = "", on_event: Callable[[Event], None] | None = None,
             **send: Any) -> TurnEnd:
        """Send a turn and wait for its end: the answer (`response.generation`) or the error
        that ended it (`generation.error`: failed, cancelled, interrupted) — returned, not
        raised. Each of the turn's events goes to `on_event` as it comes (tokens, recall,
        waits, a compaction before it). `send` takes `send`'s other fields (cwd, think,
        tools, format, …). Subscribes to every event first when this client has not. A
        daemon that stops meanwhile raises DaemonUnavailable; one that restarted,
        CtxkeepError("daemon_restarted")."""
        if self._sub is None:
            self.subscribe()
        return self.follow(self.send(session, text, **send).generation_id, on_event)

    def follow(self, generation_id: str, on_event: Callable[[Event], None] | None = None,
               session: str = "", timeout: float | None = None) -> TurnEnd:
        """Wait for the end of the turn `generation_id` (of a `send`, `regenerate` or `edit`
        this client made, subscribed before it): as `turn`, each of its events to `on_event`
        — with `session` (its id), that session's own events too (a compaction before the
        answer, a warning); with `timeout`, TimeoutError when no end comes within it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is None:
                _, event = self.wait_event()
            else:
                item = self.next_event(max(0.0, deadline - time.monotonic()))
                if item is None:
                    raise TimeoutError(f"no end of turn {generation_id} within {timeout} s")
                event = item[1]
            mine = of_turn(event, generation_id)
            if not (mine or session and getattr(event, "session_id", "") == session
                    and getattr(event, "generation_id", None) is None):
                continue
            if on_event is not None:
                on_event(event)
            if mine and ends_turn(event):
                return event  # type: ignore[return-value]

    def settle(self, session: str, on_event: Callable[[Event], None] | None = None,
               timeout: float | None = None, quiet: float = 1.0) -> None:
        """Wait until the session is idle (its queue empty: the compaction after an answer
        done too), each of its events to `on_event` meanwhile; after `quiet` seconds without
        one, the session is asked. TimeoutError past `timeout`."""
        if self._sub is None:
            self.subscribe()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = quiet if deadline is None else min(quiet, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError(f"session {session} still busy after {timeout} s")
            item = self.next_event(left)
            if item is None:
                if not self.session(session).session.busy:
                    return
                continue
            event = item[1]
            if getattr(event, "session_id", "") != session:
                continue
            if on_event is not None:
                on_event(event)
            if isinstance(event, SessionUpdated) and not event.session.busy:
                return

