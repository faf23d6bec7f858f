"""The event publisher knows every subscriber's connection before counting its subscriptions
(daemon/transports/zmq/publisher.py), however the event loop orders its wake-ups.

A busy loop (a long turn's CPU work, a slow disk) lets a connection's announcement from
the socket monitor and its first subscription both become readable before the loop looks
again. Were the announcement read through a future, it would be applied only when its task
next ran, after the subscription: the announcement then forgot the subscription as a
stale one of the descriptor's previous connection, which left it in the shared total
without a connection the publisher could close to make room. Real sockets, no daemon."""

import asyncio
import time

import zmq
import zmq.asyncio

from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.transports.zmq.publisher import EventPublisher
from ctxkeep.protocol.servers import OllamaStatus
from ctxkeep.protocol.status import DaemonStatus

ROUNDS = 6
STATUS = DaemonStatus(version="test", protocol=1, pid=1, started=0.0, uptime=0.0, sessions=0,
                      generations_running=0, control_endpoint="", events_endpoint="", store_path="",
                      last_seq=0, ollama=OllamaStatus(host="", reachable=False))


def subscriber(ctx: zmq.Context, endpoint: str, prefixes: int) -> zmq.Socket:
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(endpoint)
    for i in range(prefixes):
        sub.subscribe(f"daemon.status/{i}".encode())
    return sub


def own_and_total(publisher: EventPublisher) -> tuple[int, int]:
    """(subscriptions counted as some open connection's own, subscriptions held in all)."""
    sock = publisher.sockets[0]
    own = sum(publisher.ledger.held_by((id(sock), fd)) for fd in publisher._live.get(sock, ()))
    return own, publisher.ledger.total


async def settle(publisher: EventPublisher, total: int) -> None:
    """Until the publisher holds `total` subscriptions (10 s at most), and a little more."""
    deadline = time.monotonic() + 10
    while publisher.ledger.total != total and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)


async def rounds_seen(endpoint: str) -> list[tuple[int, int]]:
    """For each round, `own_and_total` once a newcomer's subscriptions were applied. Each
    round holds the loop while a connection already known subscribes once more and then a
    newcomer connects and subscribes: the loop then wakes for the known connection's
    subscription first, and the newcomer's announcement is read in the same turn."""
    ctx = zmq.asyncio.Context()
    publisher = EventPublisher(ctx, EventBus(), 1 << 20, lambda: STATUS)
    publisher.bind(endpoint)
    tasks = [asyncio.create_task(serve(publisher.sockets[0])) for serve in
             (publisher.serve_connections, publisher.serve_subscriptions)]
    client_ctx = zmq.Context()
    known = subscriber(client_ctx, endpoint, 1)
    seen = []
    try:
        await settle(publisher, 1)
        for n in range(ROUNDS):
            known.subscribe(f"daemon.status/known{n}".encode())
            time.sleep(0.05)  # the loop is held from here to the await
            newcomer = subscriber(client_ctx, endpoint, 3)
            time.sleep(0.2)
            await settle(publisher, n + 5)
            seen.append(own_and_total(publisher))
            newcomer.close()  # its descriptor is free for the next round's newcomer
            await settle(publisher, n + 2)
    finally:
        for task in tasks:
            task.cancel()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            assert isinstance(outcome, asyncio.CancelledError), outcome
        publisher.close()
        known.close()
        client_ctx.term()
        ctx.term()
    return seen


def test_a_connections_subscriptions_are_its_own_however_the_loop_wakes(tmp_path):
    seen = asyncio.run(rounds_seen(f"ipc://{tmp_path}/events"))
    assert seen == [(n + 5, n + 5) for n in range(ROUNDS)]
