"""A socket served from the event loop without a future per message.

`zmq.asyncio` makes a future, a poller registration and a scheduled callback for every
`recv_multipart`; on the control socket that was most of what `ping` cost over a bare
socket. An Inbox watches the socket's descriptor itself and takes every queued message
with non-blocking reads; it sleeps only when the socket says nothing is queued. The event
publisher reads its XPUB sockets and their monitors the same way.

libzmq's descriptor is edge-triggered: it signals once when commands arrive, and any
operation on the socket (a send too) may consume that signal, or raise it with nothing to
read. So a read asks `EVENTS` first (a read that finds nothing raises, which costs more
than the read), checks it again before it sleeps, and every send checks it after; the
descriptor's signal wakes the reader only where `EVENTS` says a message is queued.
"""

import asyncio

import zmq

#: Messages taken in a row before the loop is let run other tasks once.
BATCH = 64


class Inbox:
    """Receive from and reply on one socket, from the running event loop."""

    def __init__(self, socket: zmq.Socket) -> None:
        self.socket: zmq.Socket[bytes] = zmq.Socket.shadow(socket.underlying)  # plain calls, no futures
        self._wake = asyncio.Event()
        self._fd: int | None = None
        self._taken = 0

    async def receive(self, copy: bool = True) -> list:
        """The next multipart message (bytes, or zmq.Frames without `copy`); waits (without
        spinning) while none is queued. Nothing touches the socket between the read and
        the return, so a caller may act on "the message just read" (as an XPUB's manual
        subscription does) before anything else runs."""
        if self._fd is None:
            self._fd = int(self.socket.getsockopt(zmq.FD))
            asyncio.get_running_loop().add_reader(self._fd, self._signalled)
        self._taken += 1
        if self._taken % BATCH == 0:
            await asyncio.sleep(0)  # a burst of messages does not starve other tasks
        while True:
            if self._queued():  # (a read that finds nothing raises zmq.Again: 10-16 µs here)
                try:
                    return self.socket.recv_multipart(zmq.NOBLOCK, copy=copy)
                except zmq.Again:
                    pass
            self._wake.clear()
            if not self._queued():
                await self._wake.wait()

    def _signalled(self) -> None:
        """The descriptor's signal: the reader is woken only where a message is queued
        (libzmq signals for its own commands too; a task woken for nothing cost a turn
        ~15 µs on its way to the model request)."""
        if self._queued():
            self._wake.set()

    def _queued(self) -> bool:
        """Whether a message is queued (reading EVENTS also takes the descriptor's signal)."""
        return bool(int(self.socket.getsockopt(zmq.EVENTS)) & zmq.POLLIN)

    def take_queued(self) -> list[list[bytes]]:
        """Every message already queued, without waiting (a task asleep in `receive` is
        woken when the reads took the descriptor's signal of a message still queued)."""
        taken = []
        while True:
            try:
                taken.append(self.socket.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                break
        if self._queued():
            self._wake.set()
        return taken

    def send(self, frames: list[bytes]) -> None:
        """Send without waiting; raises zmq.Again (peer not reading) or ZMQError (peer gone)."""
        try:
            self.socket.send_multipart(frames, zmq.NOBLOCK)
        finally:
            if self._queued():
                self._wake.set()  # the send may have taken the descriptor's signal

    def close(self) -> None:
        """Stop watching the descriptor (the socket itself is its owner's to close)."""
        if self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None
