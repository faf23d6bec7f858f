"""Time to first token through ctxkeepd vs the bare ollama client, against the same stand-in.

    python bench/ttft.py [--n 40] [--rounds 5]

The stand-in runs in a process of its own. Three models:

- one whose first token comes at once: the disk's sync is then on the path (`accepted`
  and the first token wait for the question to be stored);
- one that behaves as a real model does: its first token after 20 ms; the question's
  sync then overlaps the model call;
- both stream their later tokens one every 10 ms (100 tokens/s, a fast GPU's pace);
  the third answers at once and all in one burst, which no model does: ctxkeepd then
  takes in, stores and announces the whole answer while its first token is on its
  way, and on a 2-core machine the client waits for a core to read it.

Four targets, interleaved sample by sample:

- bare: `ollama.AsyncClient.chat(stream=True)` until the first chunk with text;
- relay: bench/bare_relay.py, the smallest daemon of the same shape (a pyzmq ROUTER and
  PUB in front of the bare client; no store): a request until its first token event. What
  it adds over bare is the two ZeroMQ hops any such daemon pays;
- durable relay: the same relay storing each question as ctxkeepd does, the least way it
  can be done (a synced py-lmdb commit in a worker thread, started when the model request
  is out; nothing answers the question before it returns). What it adds over the relay
  is what "accepted means stored, the sync off the event loop" costs on this machine;
- ctxkeepd: a `send` request until the first `generation.token` event reaches a
  subscriber.

With `--against REV`, a fifth target: ctxkeepd as it was at commit REV (checked out in
a temporary git worktree), a daemon of its own beside this one, sample by sample. Two
sittings of the same code differ by more than most changes do (0.45 to 1.0 ms over the
durable relay on one 2-core machine), so a change is measured against its start in one run.

Each figure is the median over rounds of the rounds' p50. Floors measured in the same
run, where the store is: a 4-KiB write and fdatasync, and a synced LMDB commit of one
small record (py-lmdb alone).
"""

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import statistics
import time
from pathlib import Path

from common import (
    bare_relay,
    checkout_at,
    daemon_for,
    emit,
    fdatasync_floor,
    lmdb_commit_floor,
    percentiles,
    standin_process,
)

import ollama
import zmq

from ctxkeep.protocol.events import GenerationToken, ResponseGeneration

MODEL = "qwen2.5:7b"
#: Every request a text of its own, as a user's are (a repeated one would find its vector,
#: where recall asks for one, kept from the time before): two of these subjects each, one
#: text coming again only after the 869 others.
SUBJECTS = ("tea rivers autumn bread violins glaciers owls lanterns copper harbours maps tulips "
            "comets ferns quartz kites saffron tides orchards bells moss sparrows granite sails "
            "lemons canyons ink pebbles clocks meadows").split()
_TEXTS = [f"Say something short about {a} and {b}." for a in SUBJECTS for b in SUBJECTS if a != b]
random.Random(1).shuffle(_TEXTS)
_next = itertools.cycle(_TEXTS)


def text() -> str:
    """The next request's text."""
    return next(_next)


async def bare(client: ollama.AsyncClient, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        first = None
        async for chunk in await client.chat(MODEL, [{"role": "user", "content": text()}],
                                             stream=True, options={"num_ctx": 8192}):
            if first is None and chunk.message.content:
                first = time.perf_counter() - t0
        samples.append(first)
    return samples


def through_relay(dealer: zmq.Socket, sub: zmq.Socket, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        ask = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": text()}],
                          "options": {"num_ctx": 8192}}).encode()
        t0 = time.perf_counter()
        dealer.send(ask)
        first = None
        while True:
            assert sub.poll(30_000), "no event within 30 s"
            kind, _ = sub.recv_multipart()
            if kind == b"token":
                first = time.perf_counter() - t0
            else:
                break
        assert dealer.poll(30_000), "no reply within 30 s"
        dealer.recv()
        samples.append(first)
    return samples


def connect(control: str, events: str) -> tuple[zmq.Socket, zmq.Socket]:
    """A DEALER and a SUB (to everything) connected to a relay."""
    ctx = zmq.Context.instance()
    dealer, sub = ctx.socket(zmq.DEALER), ctx.socket(zmq.SUB)
    dealer.connect(control)
    sub.connect(events)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    return dealer, sub


def through_daemon(c, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        # a fresh session each time, so every prompt is the same size as the bare one
        sid = c.create_session(model=MODEL).session.id
        t0 = time.perf_counter()
        firsts: list[float] = []

        def first_token(event) -> None:
            if not firsts and isinstance(event, GenerationToken):
                firsts.append(time.perf_counter() - t0)
        end = c.follow(c.send(sid, text()).generation_id, first_token, timeout=30)
        assert isinstance(end, ResponseGeneration), end
        # and until the session is idle again: what ctxkeepd does after the answer (its
        # events, the compaction check) must not run into the next target's sample
        c.settle(sid, timeout=30)
        samples.append(firsts[0])
    return samples


def measure(first_token_ms: float, token_ms: float, n: int, rounds: int,
            against: tuple[str, str] | None = None) -> None:
    """One model's figures; `against`: (a commit, the folder holding its ctxkeep package)."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(standin_process(first_token_ms, token_ms))
        daemon = stack.enter_context(daemon_for(url))
        relay, durable = stack.enter_context(bare_relay(url)), stack.enter_context(bare_relay(url, durable=True))
        c = stack.enter_context(daemon.client())
        then = stack.enter_context(stack.enter_context(daemon_for(url, code=against[1])).client()) \
            if against else None
        for subscriber in filter(None, (c, then)):
            subscriber.subscribe("")
        relays = {"relay": connect(*relay), "durable": connect(*durable)}
        loop = asyncio.new_event_loop()
        client = ollama.AsyncClient(host=url)
        loop.run_until_complete(bare(client, 10))  # warm-up, all four
        time.sleep(0.2)  # the relays' subscriptions are in place before their first event
        for sockets in relays.values():
            through_relay(*sockets, 10)
        through_daemon(c, 10)
        if then is not None:
            through_daemon(then, 10)
        targets = ("bare", "relay", "durable", "ours") + (("then",) if then is not None else ())
        one = {"bare": lambda: loop.run_until_complete(bare(client, 1))[0],
               "ours": lambda: through_daemon(c, 1)[0],
               "then": lambda: through_daemon(then, 1)[0],
               **{name: lambda s=sockets: through_relay(*s, 1)[0] for name, s in relays.items()}}
        order = random.Random(0)
        p50s: dict[str, list[float]] = {t: [] for t in targets}
        every: dict[str, list[float]] = {t: [] for t in targets}
        for _ in range(rounds):
            # sample by sample, each time in a new order: a round's p50s come from the same
            # stretch of time whatever the machine does, and no target always follows another
            samples: dict[str, list[float]] = {t: [] for t in targets}
            for _ in range(n):
                for target in order.sample(targets, len(targets)):
                    samples[target].append(one[target]())
            for target in targets:
                p50s[target].append(statistics.median(samples[target]))
                every[target] += samples[target]
        loop.run_until_complete(client.close())
        loop.close()
        for sockets in relays.values():
            for sock in sockets:
                sock.close(0)
        sync = fdatasync_floor(Path(daemon.root))["p50_us"] / 1000
        commit = lmdb_commit_floor(Path(daemon.root))["p50_us"] / 1000
        stack.close()
    model = f"first_token_{first_token_ms:g}ms" + (f"_then_every_{token_ms:g}ms" if token_ms else "")
    emit(bench="ttft", model=model, target="bare_ollama_async_client", **percentiles(every["bare"]))
    emit(bench="ttft", model=model, target="bare_relay_request_to_first_token_event",
         **percentiles(every["relay"]))
    emit(bench="ttft", model=model, target="durable_relay_request_to_first_token_event",
         **percentiles(every["durable"]))
    emit(bench="ttft", model=model, target="ctxkeepd_send_to_first_token_event", **percentiles(every["ours"]))
    if against:
        emit(bench="ttft", model=model, target=f"ctxkeepd_at_{against[0]}_send_to_first_token_event",
             **percentiles(every["then"]))

    def over(a: str, b: str) -> tuple[float, list[float]]:
        rounds_ms = [round((x - y) * 1000, 2) for x, y in zip(p50s[a], p50s[b])]
        return round(statistics.median(rounds_ms), 3), rounds_ms
    added, per_round = over("ours", "bare")
    hops, _ = over("relay", "bare")
    own, _ = over("ours", "relay")
    stored, _ = over("durable", "relay")
    own_durable, _ = over("ours", "durable")
    floor = hops + (0 if first_token_ms else commit)
    then_fields = {"against": against[0], "against_over_durable_relay_ms": over("then", "durable")[0],
                   "over_against_ms": over("ours", "then")} if against else {}
    emit(bench="ttft", model=model, target="added", p50_ms=added, per_round_ms=per_round,
         zmq_hops_ms=hops, over_bare_relay_ms=own, durable_relay_over_relay_ms=stored,
         over_durable_relay_ms=own_durable, disk_fdatasync_p50_ms=round(sync, 3),
         lmdb_commit_p50_ms=round(commit, 3), above_floor_ms=round(added - floor, 3),
         floor="the two ZeroMQ hops" + ("" if first_token_ms else " + a synced LMDB commit"),
         goal="added <= 1 ms, or added - floor <= 1 ms", **then_fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="samples per target per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also measure ctxkeepd as it was at this commit, "
                                                          "sample by sample beside this one")
    parser.add_argument("--models", default="0,20,burst", help="which models: 0 (first token at once), "
                        "20 (after 20 ms), burst (all at once); comma-separated")
    args = parser.parse_args()
    models = {"0": (0.0, 10.0), "20": (20.0, 10.0), "burst": (0.0, 0.0)}
    with contextlib.ExitStack() as stack:
        against = (args.against, stack.enter_context(checkout_at(args.against))) if args.against else None
        for name in args.models.split(","):
            measure(*models[name], args.n, args.rounds, against)


if __name__ == "__main__":
    main()
