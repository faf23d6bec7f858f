"""An asyncio client: the same calls as the sync one, awaited; events as an async iterator."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import zmq
import zmq.asyncio

from ..protocol import encode, requests
from ..protocol.events import DaemonStatusEvent, Event
from ..protocol.replies import Reply
from .calls import Calls
from .errors import CtxkeepError, subscription_not_taken
from .core import (
    GapTracker, RequestIds, open_dealer, endpoints, no_answer,
    open_subscriber, patience, read_event, read_reply, unanswered, unwrap,
)

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
