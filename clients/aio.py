"""An asyncio client: the same calls as the sync one, awaited; events as an async iterator."""

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import zmq
import zmq.asyncio

from ..protocol import encode, requests
from ..protocol.events import DaemonStatusEvent, Event
from ..protocol.replies import Reply
from .calls import Calls
from .core import (
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
from .errors import CtxkeepError, daemon_restarted, subscription_not_taken

R = TypeVar("R", bound=Reply)


class AsyncClient(Calls):
    """A connection to ctxkeepd for asyncio programs. Requests may run concurrently."""

    def __init__(self, control: str | None = None, events: str | None = None,
                 timeout: float = 10.0, context: zmq.asyncio.Context | None = None) -> None:
        self.control, self.events_endpoint = endpoints(control, events)
        self.timeout = timeout
        self._context = context or zmq.asyncio.Context.instance()
        self._ids = RequestIds()
        self._dealer: zmq.asyncio.Socket | None = None
        self._sub: zmq.asyncio.Socket | None = None
        self._waiting: dict[str, asyncio.Future[Reply]] = {}
        self._reader: asyncio.Task | None = None
        self.gaps = GapTracker()
        #: (pid, start time) of the daemon that greeted the subscription.
        self.daemon_identity: tuple[int, float] | None = None

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        for sock in (self._dealer, self._sub):
            if sock is not None:
                sock.close(linger=0)
        self._dealer = self._sub = None

    async def _read_replies(self) -> None:
        assert self._dealer is not None
        while True:
            reply = read_reply(await self._dealer.recv())
            future = self._waiting.pop(reply.id, None)
            if future is not None and not future.done():
                future.set_result(reply)

    async def request(self, request: requests.Request, expect: type[R] = Reply) -> R:  # type: ignore[assignment,override]
        """Send a request and await its reply; an error reply raises CtxkeepError."""
        if self._dealer is None:
            self._dealer = open_dealer(self._context, self.control)
            self._reader = asyncio.create_task(self._read_replies())
        self._ids.stamp(request)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = future
        await self._dealer.send(encode(request))
        waited = self.timeout
        try:
            reply = await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except asyncio.TimeoutError:
            more = patience(request, self.timeout, self.control)
            if not more:  # only reads, or no daemon runs: give up now
                self._waiting.pop(request.id, None)
                raise no_answer(self.control, waited, unanswered(request)) from None
            try:  # running, only slow, and the request may be under way: wait on
                waited += more
                reply = await asyncio.wait_for(future, more)
            except asyncio.TimeoutError:
                self._waiting.pop(request.id, None)
                raise no_answer(self.control, waited, unanswered(request)) from None
        return unwrap(reply, expect)

    async def subscribe(self, *prefixes: str) -> DaemonStatusEvent:
        """Subscribe (default: to everything); returns the daemon's greeting once live."""
        self._sub = open_subscriber(self._sub, self._context, self.events_endpoint, prefixes)

        async def greeting() -> DaemonStatusEvent:
            while True:
                item = await self.next_event()
                if item and isinstance(item[1], DaemonStatusEvent):
                    self.daemon_identity = (item[1].status.pid, item[1].status.started)
                    return item[1]
        try:
            return await asyncio.wait_for(greeting(), self.timeout)
        except asyncio.TimeoutError:
            pass
        timeout, self.timeout = self.timeout, min(self.timeout, 2.0)
        try:  # a daemon that answers requests but not the subscription: its limits
            pid = (await self.status()).status.pid
        except CtxkeepError:
            raise no_answer(self.events_endpoint, timeout) from None
        finally:
            self.timeout = timeout
        raise subscription_not_taken(pid, timeout)

    async def next_event(self) -> tuple[str, Event] | None:
        """The next published message as (topic, event); None for one this client cannot read."""
        assert self._sub is not None, "subscribe() first"
        item = read_event(await self._sub.recv_multipart())
        if item is not None:
            self.gaps.see(item[1])
        return item

    async def events(self) -> AsyncIterator[tuple[str, Event]]:
        """Events as they come."""
        while True:
            item = await self.next_event()
            if item is not None:
                yield item

    async def turn(self, session: str, text: str = "", on_event: Callable[[Event], None] | None = None,
                   quiet: float = 1.0, **send: Any) -> TurnEnd:
        """Send a turn and await its end: the answer or the error that ended it (returned,
        not raised); each of its events goes to `on_event` as it comes; `send` takes
        `send`'s other fields. Subscribes to every event first when this client has not.
        After `quiet` seconds without an event the daemon is asked whether it still runs:
        DaemonUnavailable when none answers, CtxkeepError("daemon_restarted") when another
        one does."""
        if self._sub is None:
            await self.subscribe()
        generation = (await self.send(session, text, **send)).generation_id
        while True:
            try:
                item = await asyncio.wait_for(self.next_event(), quiet)
            except asyncio.TimeoutError:
                await self._still_running()
                continue
            if item is None or not of_turn(item[1], generation):
                continue
            if on_event is not None:
                on_event(item[1])
            if ends_turn(item[1]):
                return item[1]  # type: ignore[return-value]

    async def _still_running(self) -> None:
        """Return when the daemon that greeted the subscription still runs; raise when none
        answers (DaemonUnavailable) or another one does."""
        pid = running_daemon(self.control)
        if pid is not None and self.daemon_identity and pid == self.daemon_identity[0]:
            return  # the same daemon holds its lock: slow, not gone
        timeout, self.timeout = self.timeout, min(self.timeout, 2.0)
        try:
            status = (await self.status()).status  # raises DaemonUnavailable when none answers
        finally:
            self.timeout = timeout
        if self.daemon_identity and (status.pid, status.started) != self.daemon_identity:
            raise daemon_restarted(status.pid)
