"""Time to plan automatic compaction levels 1 and 2 on a 10,000-message session.

    python bench/compaction.py [--messages 10000] [--runs 5]

A real LMDB store holds the session (text drawn from this repository's documents,
with their word frequencies, and full @file references);
planning is what runs before any model call: reading the context, measuring
the budget, choosing the file references to summarize (level 1), scoring
every older message by BM25 against the recent turns and choosing the half
to prune (level 2; embeddings are a separate, cached call and not timed
here). User messages are preserved, as by default. Run twice: with the
active context a 32K-token window holds (about 600 messages), and with all
10,000 messages active (the worst case). Prints one JSON line per step with
the median of the runs (target: under 50 ms for levels 1 and 2).
"""

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from common import emit

from ctxkeep.daemon.compaction.planner import (
    RECENT_FILE_MESSAGES,
    plan_file_summaries,
    plan_prune,
    preserved_seqs,
    prune_candidates,
)
from ctxkeep.daemon.compaction.relevance import TermCache, score
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.usage import measure
from ctxkeep.daemon.store.records import Attachment, NewMessage
from ctxkeep.daemon.store.store import Store

REPO = Path(__file__).resolve().parent.parent
#: Words with their natural frequencies: this repository's documents, as a conversation's text.
WORDS = [w for f in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
         for w in f.read_text().split() if w.isalpha()]


def build(store: Store, messages: int, active: int) -> str:
    rng = random.Random(3)
    s = store.sessions.create(name="", model="m", system="You are helpful.", options={}, num_ctx=1 << 20)
    batch = []
    for i in range(messages):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 60)))
        files = []
        if i % 50 == 0:
            files = [Attachment(path=f"src/f{i}.py", mode="full", block="<file>...</file>" * 40,
                                summary="<file>outline</file>", tokens=400, summary_tokens=20)]
        batch.append(NewMessage(role="user" if i % 2 == 0 else "assistant", content=text, files=files))
        if len(batch) == 500:
            store.history.append(s.id, batch, activate=range(len(batch)))
            batch = []
    if batch:
        store.history.append(s.id, batch, activate=range(len(batch)))
    store.context.update(s.id, lambda c, _: setattr(c, "seqs", c.seqs[-active:]))
    return s.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    # The active context is bounded by the window: a 32K-token window holds about 600 of
    # these messages. The worst case keeps every message of the session active.
    for active in (600, args.messages):
        plan(args.messages, active, args.runs)


def plan(messages: int, active_count: int, runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    store = Store.open(root / "store")
    sid = build(store, messages, active_count)
    estimator, config, terms = Estimator(store), Config(), TermCache()
    steps: dict[str, list[float]] = {k: [] for k in ("load", "measure", "level1", "level2", "total")}
    for _ in range(runs):
        t0 = time.perf_counter()
        session = store.sessions.get(sid)
        context = store.context.get(sid)
        active = store.history.messages(sid, context.seqs)
        t1 = time.perf_counter()
        measure(session, context, active, estimator, config)
        t2 = time.perf_counter()
        plan_file_summaries(context, active)
        t3 = time.perf_counter()
        candidates = prune_candidates(context, active, preserved_seqs(context, active, 5, True))
        scores = asyncio.run(score(candidates, active[-RECENT_FILE_MESSAGES:], terms=terms, session_id=sid))
        plan_prune(candidates, scores)
        t4 = time.perf_counter()
        for key, value in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
            value_ms = value * 1000
            steps[key].append(value_ms)
    store.close()
    shutil.rmtree(root, ignore_errors=True)
    for key, values in steps.items():
        emit(bench="compaction_plan", messages=messages, active=active_count, step=key,
             median_ms=round(statistics.median(values), 2), max_ms=round(max(values), 2),
             **({"goal_ms": "< 50"} if key in ("level1", "level2", "total") else {}))


if __name__ == "__main__":
    main()
