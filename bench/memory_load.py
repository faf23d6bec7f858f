"""Memory's cost per turn under load: many clients at once, each holding a chat of its own,
against ctxkeepd with memory across sessions on and off, in the same run.

    python bench/memory_load.py [--clients 100] [--turns 5] [--rounds 2] [--pasts 6]

Two daemons in their own processes, the stand-in in a third (answering at once), each
daemon holding the same past: `--pasts` LongMemEval development questions' ~48 sessions
each (../shared/bench-data/longmemeval/; 6: ~290 sessions, ~3,000 messages), imported and read into memory's index before
anything is measured. One daemon has `memory = "all"` (the default), the other
`memory = "none"`. In each round, first one then the other (alternating which goes first),
`--clients` threads each open a new session and send `--turns` messages one after another —
questions about that past (its dev questions) and everyday requests, in turn — timing each
from `send` to its answer. Reported: p50 and p95 per turn for each, and their ratio.

Goal (issue 58): memory's p95 within 1.3x of memory off.
"""

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

from common import daemon_for, emit, standin_process

import recall_lme
from memory import MODEL, undated
from unrelated import UNRELATED


def past(daemon, questions: list[recall_lme.Question]) -> None:
    """The questions' sessions imported; back once memory has read them."""
    with daemon.client(timeout=300) as c:
        for q in questions:
            for n in sorted({t.session for t in q.turns}):
                c.import_session(name=f"{q.qid}-{n}", model=MODEL, num_ctx=4096, messages=[
                    {"role": t.role, "content": t.content, "created": t.created} for t in q.turns if t.session == n])
        asker = c.create_session(model=MODEL, num_ctx=4096).session.id
        c.turn(asker, "Hello!")  # memory reads the imports
        recall_lme.wait_remembered(c)
        c.delete(asker)


def load(daemon, clients: int, texts: list[list[str]]) -> list[float]:
    """Each client's turns, all clients at once; every turn's seconds from send to answer."""
    times: list[float] = []
    failed: list[str] = []
    start = threading.Barrier(clients)

    def client(said: list[str]) -> None:
        with daemon.client(timeout=600) as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL, num_ctx=4096).session.id
            start.wait()
            for text in said:
                began = time.perf_counter()
                end = c.turn(sid, text)
                times.append(time.perf_counter() - began)
                if getattr(end, "code", ""):
                    failed.append(end.code)
            c.settle(sid)  # (what runs after the last answer) before the session goes
            c.delete(sid)
    threads = [threading.Thread(target=client, args=(texts[i],)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed, f"turns failed: {failed[:5]}"
    return times


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pasts", type=int, default=6,
                        help="dev questions whose ~48 sessions each daemon holds (one of each type first)")
    args = parser.parse_args()
    from recall import pick
    questions = [undated(q) for q in pick("s", 0, max(1, -(-args.pasts // 6)), "")]
    asked = [q.text.split("] ", 1)[-1] for q in questions]  # without the question's date
    texts = [[(asked if (i + k) % 2 == 0 else UNRELATED)[(i * args.turns + k) % 6] for k in range(args.turns)]
             for i in range(args.clients)]
    results: dict[str, list[float]] = {"all": [], "none": []}
    with standin_process() as url, daemon_for(url) as on, daemon_for(url, 'memory = "none"') as off:
        daemons = {"all": on, "none": off}
        for d in daemons.values():
            past(d, questions[:args.pasts])
        for r in range(args.rounds):
            for mode in (("all", "none") if r % 2 == 0 else ("none", "all")):
                times = load(daemons[mode], args.clients, texts)
                results[mode] += times
                emit(bench="memory_load", round=r + 1, memory=mode, turns=len(times),
                     p50_ms=round(1000 * p(times, 0.5), 1), p95_ms=round(1000 * p(times, 0.95), 1))
    on_p95, off_p95 = p(results["all"], 0.95), p(results["none"], 0.95)
    emit(bench="memory_load", clients=args.clients, turns_each=args.turns, rounds=args.rounds,
         memory_on_p50_ms=round(1000 * statistics.median(results["all"]), 1),
         memory_off_p50_ms=round(1000 * statistics.median(results["none"]), 1),
         memory_on_p95_ms=round(1000 * on_p95, 1), memory_off_p95_ms=round(1000 * off_p95, 1),
         p95_ratio=round(on_p95 / off_p95, 2), goal="p95_ratio <= 1.3")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    main()
