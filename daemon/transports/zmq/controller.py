"""The control socket's request loop: frames in, decode, dispatch to a handler, reply.

Control is a ROUTER; clients connect a DEALER (or a REQ) and send one JSON frame
per request. Replies go back with NOBLOCK and ROUTER_MANDATORY, so a vanished
client is noticed and never blocks the loop. Every malformed frame, and every
handler failure, gets an `error` reply naming the problem: nothing a request
does can stop the loop.
"""

import asyncio
import logging
import time
from functools import partial

import zmq

from ctxkeep.daemon.handlers.dispatch import dispatch
from ctxkeep.daemon.handlers.registry import LOCAL, WAITING, Caller
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.transports.zmq.inbox import Inbox
from ctxkeep.protocol import DecodeFailure, ErrorCode, decode_request, encode
from ctxkeep.protocol.replies import Error, Reply
from ctxkeep.protocol.requests import Request

log = logging.getLogger(__name__)
#: Frames larger than this (an import of thousands of messages) are decoded off the loop.
OFF_LOOP_BYTES = 256 * 1024


def _forget(last: dict[bytes, "asyncio.Task[None]"], peer: bytes, task: "asyncio.Task[None]") -> None:
    """A peer's request is answered: it is no longer the one its next request waits for
    (unless a later one took its place)."""
    if last.get(peer) is task:
        del last[peer]


class Controller:
    """Serves requests from ROUTER sockets with the daemon's services."""

    def __init__(self, services: Services, max_frame_bytes: int) -> None:
        self.services = services
        self.max_frame_bytes = max_frame_bytes
        self._drops = 0
        self._drop_logged = float("-inf")

    async def serve(self, socket: zmq.Socket, remote: bool) -> None:
        """Receive requests. Each client's requests are handled one after another, in the
        order sent (so its replies and its jobs keep that order); different clients are
        served at once, so one client's slow request (a file to read, a model to ask)
        never holds up another's. Requests that never wait are answered inline."""
        caller = Caller(remote=remote)  # this socket's requests come over TCP (or not)
        router = Inbox(socket)
        last: dict[bytes, asyncio.Task[None]] = {}
        try:
            while True:
                frames = await router.receive()
                peer = frames[0]
                envelope, request = self._unwrap(frames)
                before = last.get(peer)
                if before is None and not isinstance(request, bytes) and type(request) not in WAITING:
                    self._reply(router, peer, envelope, await self.dispatch(request, caller))
                    continue
                task = asyncio.create_task(self._answer(router, peer, envelope, request, caller, before))
                last[peer] = task
                task.add_done_callback(partial(_forget, last, peer))
        finally:
            router.close()

    def _unwrap(self, frames: list[bytes]) -> tuple[list[bytes], "Request | Error | bytes"]:
        """(envelope, the decoded request or the error that answers the frame; a frame
        over OFF_LOOP_BYTES as it came, to be decoded off the event loop)."""
        rest = frames[1:]
        envelope: list[bytes] = []
        if len(rest) == 2 and rest[0] == b"":  # a REQ socket's empty delimiter
            envelope, rest = [b""], rest[1:]
        if len(rest) != 1:
            return envelope, Error(code=ErrorCode.BAD_FRAME.value,
                                   message=f"expected one JSON frame per request, got {len(rest)}")
        # a large frame (an import) is decoded in a worker thread: other clients go on
        return envelope, rest[0] if len(rest[0]) > OFF_LOOP_BYTES else self.decode(rest[0])

    async def _answer(self, router: Inbox, peer: bytes, envelope: list[bytes],
                      request: "Request | Error | bytes", caller: Caller,
                      before: "asyncio.Task[None] | None") -> None:
        """Answer one request (a large frame decoded first), after the same client's
        previous one; never raises."""
        if isinstance(request, bytes):
            request = await asyncio.to_thread(self.decode, request)
        if before is not None:
            await asyncio.wait([before])
        self._reply(router, peer, envelope, await self.dispatch(request, caller))

    def _reply(self, router: Inbox, peer: bytes, envelope: list[bytes], reply: Reply) -> None:
        try:
            body = encode(reply)
        except Exception as exc:  # never let one reply stop the loop
            log.exception("could not encode a reply")
            body = encode(Error(id=getattr(reply, "id", ""), code=ErrorCode.INTERNAL.value,
                                message=f"internal error ({exc!r}): see the daemon's log"))
        self._send(router, peer, envelope, body)

    def decode(self, frame: bytes) -> "Request | Error":
        """The request in a frame, or the error reply that says why there is none."""
        try:
            return decode_request(frame, self.max_frame_bytes)
        except DecodeFailure as exc:
            return Error(id=exc.request_id, code=exc.code.value, message=exc.message)
        except Exception as exc:  # a decoder bug must not stop the loop
            log.exception("decoding a request failed")
            return Error(code=ErrorCode.BAD_JSON.value, message=f"the frame could not be read ({exc!r})")

    async def dispatch(self, request: "Request | Error", caller: Caller = LOCAL) -> Reply:
        """The reply to a decoded request (an Error passes through); never raises."""
        if isinstance(request, Error):
            return request
        return await dispatch(self.services, request, caller)

    def _send(self, router: Inbox, peer: bytes, envelope: list[bytes], body: bytes) -> None:
        """Send a reply without waiting: a client that is gone or not reading loses it,
        which is logged (at most once a second, with a count), never raised."""
        try:
            router.send([peer, *envelope, body])
        except zmq.ZMQError as exc:
            self._dropped(peer, exc)

    def _dropped(self, peer: bytes, exc: BaseException | None) -> None:
        self._drops += 1
        now = time.monotonic()
        if now - self._drop_logged >= 1.0:
            why = "is not reading" if isinstance(exc, zmq.Again) else f"is gone ({exc})"
            log.warning("reply dropped: client %s %s (%d dropped since the last report)",
                        peer.hex(), why, self._drops)
            self._drops, self._drop_logged = 0, now
