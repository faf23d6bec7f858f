"""The control socket's Inbox (daemon/transports/zmq/inbox.py): no message is left waiting, however
receives and sends interleave. libzmq's descriptor is edge-triggered and a send may take
its signal; a missed wake-up would leave a request queued and this test waiting on it
until its deadline."""

import asyncio
import threading

import zmq
import zmq.asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.transports.zmq.inbox import BATCH, Inbox


def client(endpoint: str, bursts: list[int], answered: list[int]) -> None:
    """Pipelined requests: a burst of k sends, then k receives, for each k."""
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.RCVTIMEO, 10_000)  # every wait has a deadline
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)
    try:
        for k in bursts:
            for i in range(k):
                dealer.send(b"%d" % i)
            for _ in range(k):
                dealer.recv()
                answered.append(1)
    except zmq.Again:
        pass
    finally:
        dealer.close()
        ctx.term()


async def reply_later(inbox: Inbox, frames: list[bytes], turns: int) -> None:
    """Reply from a task of its own after `turns` loop iterations, as a waiting request's
    task does in the daemon: the send then runs while the receiver sleeps."""
    for _ in range(turns):
        await asyncio.sleep(0)
    inbox.send(frames)


class EagerSocket(zmq.Socket):
    """A socket whose every send processes its pending commands, as libzmq's own sends do
    now and then (throttled by time): the send then always takes the descriptor's signal."""

    def send_multipart(self, msg_parts, flags=0, copy=True, track=False, **kwargs):
        sent = super().send_multipart(msg_parts, flags, copy, track, **kwargs)
        self.getsockopt(zmq.EVENTS)
        return sent


async def serve(endpoint: str, bursts: list[int], eager: bool = False) -> int:
    ctx = zmq.asyncio.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind(endpoint)
    inbox = Inbox(router)
    if eager:
        inbox.socket = EagerSocket.shadow(router.underlying)
    answered: list[int] = []
    thread = threading.Thread(target=client, args=(endpoint, bursts, answered))
    thread.start()
    try:
        replies = []
        for i in range(sum(bursts)):
            frames = await asyncio.wait_for(inbox.receive(), 10)
            if i % 2:
                inbox.send(frames)
            else:
                replies.append(asyncio.create_task(reply_later(inbox, frames, i % 5)))
        await asyncio.gather(*replies)
        return sum(bursts)
    finally:
        thread.join(15)
        inbox.close()
        router.close(linger=0)
        ctx.term()
        assert len(answered) == sum(bursts), "the client did not get every reply"


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 3 * BATCH), min_size=1, max_size=6), st.booleans())
def test_every_request_is_received_and_answered(tmp_path_factory, bursts, eager):
    endpoint = f"ipc://{tmp_path_factory.mktemp('inbox')}/s"
    assert asyncio.run(serve(endpoint, bursts, eager)) == sum(bursts)


def test_a_reply_to_a_gone_client_raises_instead_of_blocking(tmp_path):
    async def main() -> None:
        ctx = zmq.asyncio.Context()
        router = ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        router.bind(f"ipc://{tmp_path}/s")
        inbox = Inbox(router)
        try:
            inbox.send([b"nobody", b"reply"])
        except zmq.ZMQError as exc:
            assert exc.errno == zmq.EHOSTUNREACH
        else:
            raise AssertionError("a reply to an unknown peer was taken")
        finally:
            inbox.close()
            router.close(linger=0)
            ctx.term()
    asyncio.run(main())
