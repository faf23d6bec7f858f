"""What grows with the history and the number of clients, each beside a baseline measured
in the same run.

    python bench/scale.py [--active 10000 100000] [--sessions 1000] [--clients 50]

- `turn`: the daemon's work from a `send` request to the model call, on a session with
  N active messages (the real store and services in this process, a model backend in
  memory). First turn after start (features not cached yet) and the median of the
  next ones. Baseline: JSON-encoding the same prompt, which any client pays.
- `stored`: the same with N messages stored and only the newest 10 in a 4,096-token window
  (the rest recallable, recall and memory on, by words: no embedding waits), asked questions
  that reach into the past and everyday ones by turns; also the whole turn (`send` until the
  session is idle again, the model answering at once). Goal: p50 <= 15 ms at 10,000.
- `active_pages`: the daemon's work for the whole active context page by page
  (`history` with `active`, 200 a page, as `ctxkeep show --active` asks), each reply
  encoded as it is sent. Baseline: the same messages read straight from the store in
  one transaction, converted and encoded in one piece.
- `search`: `search` over 100,000 messages in 10 sessions, through the word index the store
  keeps as messages are stored. Baseline: scanning every message for the same words.
- `session_list`: requests per second of `session.list` with M sessions from C
  clients at once, through ctxkeepd in its own process, against a bare ROUTER (its own
  process) answering every request with the same reply bytes; interleaved rounds.
  Goal: at least 0.5x the bare server.
"""

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from common import daemon_for, emit, standin_process

import msgspec
import zmq

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.daemon.store.shown import message_info
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from ctxkeep.protocol.replies import HistoryReply
from inprocess import InProcess
from memory_backend import MemoryBackend
from ollama_standin import Model

MODEL = "huge:7b"
WORDS = ("context window token model prompt answer question summary history message session "
         "daemon client socket store commit event budget estimate level compaction").split()
REPO = Path(__file__).resolve().parent.parent
#: Words with their natural frequencies (this repository's documents), for search.
PROSE = [w for f in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
         for w in f.read_text().split() if w.isalpha()]


class TimedBackend(MemoryBackend):
    """The in-memory backend, noting when each chat is asked for; it counts the prompt
    cheaply (the model's own work is not what is measured)."""

    def __init__(self) -> None:
        super().__init__(reply=lambda messages: "ok")
        self.models[MODEL] = Model(MODEL, context_length=1 << 24)
        self.called = asyncio.Event()
        self.called_at = 0.0
        self.sent: list = []

    def _prompt(self, model, messages, options):
        self.called_at = time.perf_counter()
        self.called.set()
        sent = self.sent = list(messages)
        return sent, sum(len(m["content"]) for m in sent) // 4 + 1


def fill(store: Store, sid: str, count: int, words: list[str] | tuple[str, ...] = WORDS,
         active: int | None = None) -> None:
    """`count` messages of `words` stored in the session, the newest `active` (default: all)
    in its active context."""
    rng = random.Random(7)
    batch = []
    first_active = 0 if active is None else count - active
    for i in range(count):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(15, 60)))
        batch.append(NewMessage(role="user" if i % 2 == 0 else "assistant", content=text))
        if len(batch) == 1000 or i == count - 1:
            start = i + 1 - len(batch)
            store.history.append(sid, batch, activate=range(max(0, first_active - start), len(batch)))
            batch = []


async def turns(active: int, runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    backend = TimedBackend()
    try:
        daemon = InProcess(root, backend, Config())
        record = daemon.store.sessions.create(name="big", model=MODEL, system="Be brief.",
                                             options={}, num_ctx=1 << 24, context_length=1 << 24)
        daemon.store.sessions.update(record.id, lambda r: setattr(r, "auto_compaction", False))
        fill(daemon.store, record.id, active)
        samples, floors = [], []
        for i in range(runs + 1):
            backend.called.clear()
            t0 = time.perf_counter()
            await daemon.call(requests.Send(id=f"t{i}", session=record.id, text=f"question {i}"))
            await asyncio.wait_for(backend.called.wait(), 60)
            samples.append(backend.called_at - t0)
            prompt = backend.chats[-1][0] if backend.chats else []
            await daemon.services.jobs.drain(60)
            _, _, messages = daemon.store.history.view(record.id)
            t1 = time.perf_counter()
            msgspec.json.encode([{"role": m.role, "content": m.content} for m in messages])
            floors.append(time.perf_counter() - t1)
            del prompt
        daemon.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="scale", target="turn_to_model_call", active=active,
         first_ms=round(samples[0] * 1000, 2), median_ms=round(statistics.median(samples[1:]) * 1000, 2),
         baseline_encode_prompt_ms=round(statistics.median(floors) * 1000, 2), goal_ms="<= 20")


async def stored_turns(stored: int, runs: int) -> None:
    """A turn's work over a session of `stored` messages in a 4,096-token window (`stored`
    in the module's docstring)."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    backend = TimedBackend()
    rng = random.Random(3)
    try:
        daemon = InProcess(root, backend, Config(embed_model="", embed_builtin=False))
        record = daemon.store.sessions.create(name="long", model=MODEL, system="Be brief.",
                                             options={}, num_ctx=4096, context_length=1 << 24)
        daemon.store.sessions.update(record.id, lambda r: setattr(r, "auto_compaction", False))
        fill(daemon.store, record.id, stored, active=10)
        to_call, whole, floors, recalled = [], [], [], 0
        for i in range(runs + 1):
            text = (f"What did I say about the {rng.choice(WORDS)} and the {rng.choice(WORDS)} back then?"
                    if i % 2 else f"Thanks, that helps ({i}).")
            backend.called.clear()
            t0 = time.perf_counter()
            accepted = await daemon.call(requests.Send(id=f"t{i}", session=record.id, text=text))
            await asyncio.wait_for(backend.called.wait(), 60)
            to_call.append(backend.called_at - t0)
            await daemon.services.jobs.drain(60)
            whole.append(time.perf_counter() - t0)
            prompt = backend.sent
            recalled += any(getattr(e, "generation_id", "") == accepted.generation_id and e.recalled
                            for e in daemon.of_type(GenerationRecalled))
            t1 = time.perf_counter()
            msgspec.json.encode(prompt)
            floors.append(time.perf_counter() - t1)
        daemon.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ms = lambda xs: round(statistics.median(xs) * 1000, 2)
    emit(bench="scale", target="turn_over_stored_messages", stored=stored, window=4096, turns=runs,
         turns_with_recall=recalled, to_model_call_first_ms=round(to_call[0] * 1000, 2),
         to_model_call_p50_ms=ms(to_call[1:]), reaching_p50_ms=ms(to_call[1::2]), everyday_p50_ms=ms(to_call[2::2]),
         whole_turn_p50_ms=ms(whole[1:]),
         whole_turn_p95_ms=round(sorted(whole[1:])[int(0.95 * (runs - 1))] * 1000, 2),
         baseline_encode_prompt_ms=ms(floors), goal_ms="p50 <= 15")


async def active_pages(active: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    try:
        daemon = InProcess(root, TimedBackend(), Config())
        record = daemon.store.sessions.create(name="big", model=MODEL, system="", options={},
                                             num_ctx=1 << 24, context_length=1 << 24)
        fill(daemon.store, record.id, active)
        times = []
        for _ in range(2):  # the first paging decodes and encodes; a second one finds them kept
            t0 = time.perf_counter()
            start, pages, seen, client = 0, 0, 0, 0.0
            while True:
                reply = await daemon.call(requests.History(id="h", session=record.id, start=start,
                                                           limit=200, active=True))
                body = msgspec.json.encode(reply)  # the bytes a client would be sent
                t_read = time.perf_counter()
                reply = msgspec.json.decode(body, type=HistoryReply)  # the client's part: not counted
                client += time.perf_counter() - t_read
                pages, seen = pages + 1, seen + len(reply.messages)
                if reply.next is None:
                    break
                start = reply.next
            times.append(time.perf_counter() - t0 - client)
        t1 = time.perf_counter()
        seqs = daemon.store.context.get(record.id).seqs
        msgspec.json.encode([message_info(m) for m in daemon.store.history.messages(record.id, seqs)])
        bare = time.perf_counter() - t1
        assert seen == active, (seen, active)
        daemon.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="scale", target="active_pages", active=active, pages=pages,
         first_ms=round(times[0] * 1000, 1), again_ms=round(times[1] * 1000, 1),
         baseline_one_read_ms=round(bare * 1000, 1), goal_ms="<= 20 at 10k")


async def search(total: int) -> None:
    """`search` over `total` stored messages in 10 sessions, through the handler (the word
    index); baseline: a scan of every message's text for the same words."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    try:
        daemon = InProcess(root, TimedBackend(), Config())
        for i in range(10):
            record = daemon.store.sessions.create(name=f"s{i}", model=MODEL, system="", options={},
                                                 num_ctx=1 << 24, context_length=1 << 24)
            fill(daemon.store, record.id, total // 10, PROSE)
        for query in ("session", "compaction", "daemon socket", "budget estimate level"):
            timings = []
            for _ in range(5):
                t0 = time.perf_counter()
                reply = await daemon.call(requests.Search(query=query, limit=20))
                timings.append(time.perf_counter() - t0)
            wanted = set(query.split())
            t1 = time.perf_counter()
            scanned = sum(1 for s in daemon.store.sessions.all() for m in daemon.store.history.page(s.id, 0, total)[0]
                          if wanted <= set(m.content.lower().split()))
            scan = time.perf_counter() - t1
            assert scanned == reply.total, (scanned, reply.total)
            emit(bench="scale", target="search", messages=total, query=query, matches=reply.total,
                 median_ms=round(statistics.median(timings) * 1000, 1),
                 baseline_scan_ms=round(scan * 1000, 1), goal_ms="<= 200")
        daemon.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bare_server(endpoint: str, reply: bytes, stop: bytes) -> None:
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind(endpoint)
    while True:
        peer, frame = router.recv_multipart()
        if frame == stop:
            router.send_multipart([peer, b"bye"])
            break
        router.send_multipart([peer, reply])


def hammer(endpoint: str, clients: int, seconds: float) -> tuple[float, list[float]]:
    """(requests per second, latencies) of `clients` DEALERs each sending session.list
    again as soon as its reply arrives, for `seconds`."""
    ctx = zmq.Context.instance()
    socks = []
    poller = zmq.Poller()
    for _ in range(clients):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(endpoint)
        poller.register(s, zmq.POLLIN)
        socks.append(s)
    body = msgspec.json.encode(requests.SessionList(id="l"))
    sent_at = {}
    for s in socks:
        sent_at[s] = time.perf_counter()
        s.send(body)
    latencies: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for s, _ in poller.poll(10_000):
            s.recv()
            now = time.perf_counter()
            latencies.append(now - sent_at[s])
            sent_at[s] = now
            s.send(body)
    for s in socks:
        s.close()
    return len(latencies) / seconds, latencies


def session_list(sessions: int, clients: int, rounds: int, seconds: float) -> None:
    with standin_process() as url, daemon_for(url) as daemon:
        with daemon.client(timeout=60) as c:
            for i in range(sessions):
                c.create_session(name=f"s{i}", model="qwen2.5:7b")
            reply = c.request(requests.SessionList(id="l"))
        body = msgspec.json.encode(reply)
        endpoint = f"ipc:///tmp/ckb-bare-{uuid.uuid4().hex[:8]}"
        stop = b"stop-" + uuid.uuid4().hex.encode()
        import multiprocessing
        server = multiprocessing.Process(target=bare_server, args=(endpoint, body, stop), daemon=True)
        server.start()
        bare_rates, ours_rates, bare_lat, ours_lat, ratios = [], [], [], [], []
        hammer(endpoint, clients, 0.5)
        hammer(daemon.control, clients, 0.5)
        for _ in range(rounds):
            rb, lb = hammer(endpoint, clients, seconds)
            ro, lo = hammer(daemon.control, clients, seconds)
            bare_rates.append(rb)
            ours_rates.append(ro)
            ratios.append(ro / rb)
            bare_lat += lb
            ours_lat += lo
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.connect(endpoint)
        s.send(stop)
        server.join(5)
    pct = lambda xs, q: round(sorted(xs)[int(q * (len(xs) - 1))] * 1000, 2)
    emit(bench="scale", target="session_list_bare_router", sessions=sessions, clients=clients,
         reply_bytes=len(body), req_per_s=round(statistics.median(bare_rates)),
         p50_ms=pct(bare_lat, 0.5), p99_ms=pct(bare_lat, 0.99))
    emit(bench="scale", target="session_list_ctxkeepd", sessions=sessions, clients=clients,
         req_per_s=round(statistics.median(ours_rates)), p50_ms=pct(ours_lat, 0.5), p99_ms=pct(ours_lat, 0.99))
    emit(bench="scale", target="session_list_ratio", ratio=round(statistics.median(ratios), 2),
         per_round=[round(r, 2) for r in ratios], goal=">= 0.5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--active", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--turns", type=int, default=5, help="turns per size after the first")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per round and target")
    parser.add_argument("--search", type=int, default=100_000, help="messages to search")
    parser.add_argument("--stored", type=int, nargs="*", default=[10_000], help="messages stored (`stored`)")
    parser.add_argument("--only", choices=["turn", "stored", "pages", "list", "search"], default=None)
    args = parser.parse_args()
    for active in args.active:
        if args.only in (None, "turn"):
            asyncio.run(turns(active, args.turns))
        if args.only in (None, "pages"):
            asyncio.run(active_pages(active))
    for stored in args.stored:
        if args.only in (None, "stored"):
            asyncio.run(stored_turns(stored, max(args.turns, 40)))
    if args.only in (None, "search"):
        asyncio.run(search(args.search))
    if args.only in (None, "list"):
        session_list(args.sessions, args.clients, args.rounds, args.seconds)


if __name__ == "__main__":
    main()
