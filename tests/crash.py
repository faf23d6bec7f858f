"""Kill the daemon at random points and check that nothing acknowledged was lost.

Shared by tests/process/test_crash.py (a bounded run in CI) and bench/crash.py (the soak).
Each round starts the daemon on the same store, does one kind of work — idle
turns, a streaming answer, queued questions, a compaction — SIGKILLs it at a
random moment, checks the store read-only, restarts it, and reads every
session back through the protocol:

- every question whose `accepted` reply arrived is in history;
- every question has an answer record (complete, or interrupted: the start-up
  recovery marks what the crash cut);
- the store's invariants hold (daemon/store/check.py).
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field

from ctxkeep.clients import CtxkeepError
from ctxkeep.daemon.store.check import check
from ctxkeep.protocol.events import GenerationToken

MODES = ("idle", "streaming", "queued", "compacting")


@dataclass
class Report:
    kills: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    invariant_failures: list[str] = field(default_factory=list)
    restarts_failed: int = 0
    by_mode: dict[str, int] = field(default_factory=dict)


def run(daemon, standin, kills: int, seed: int = 1) -> Report:
    rng = random.Random(seed)
    report = Report()
    store = daemon.root / "data" / "ctxkeep" / "store"
    acked: dict[str, str] = {}  # text -> session id
    standin.reply_fn = lambda msgs: " ".join(f"w{i}" for i in range(rng.randint(20, 80)))
    daemon.start()
    with daemon.client() as c:
        sessions = [c.create_session(model="qwen2.5:7b").session.id for _ in range(2)]
    for k in range(kills):
        mode = MODES[k % len(MODES)]
        report.by_mode[mode] = report.by_mode.get(mode, 0) + 1
        standin.chunk_delay = 0.004 if mode in ("streaming", "queued", "compacting") else 0.0
        sid = sessions[k % 2]
        try:
            with daemon.client(timeout=5) as c:
                c.subscribe("")

                def send(text: str) -> None:
                    c.send(sid, text)
                    acked[text] = sid  # the reply arrived: it must survive
                if mode == "idle":
                    send(f"round {k}: a question")
                    time.sleep(rng.uniform(0.0, 0.3))
                elif mode == "streaming":
                    send(f"round {k}: tell me more")
                    deadline = time.monotonic() + 5
                    while time.monotonic() < deadline:
                        item = c.next_event(timeout=0.5)
                        if item and isinstance(item[1], GenerationToken):
                            break
                    time.sleep(rng.uniform(0.0, 0.05))
                elif mode == "queued":
                    for j in range(rng.randint(2, 4)):
                        send(f"round {k}: queued question {j}")
                    time.sleep(rng.uniform(0.0, 0.02))
                else:
                    send(f"round {k}: before compacting")
                    try:
                        c.compact(sid, tail_turns=1)
                    except CtxkeepError:
                        pass
                    time.sleep(rng.uniform(0.0, 0.1))
        except CtxkeepError:
            pass  # a request in flight at the kill is not acknowledged
        daemon.stop(signal.SIGKILL)
        report.kills += 1
        report.invariant_failures += [f"round {k} ({mode}), killed: {p}" for p in check(store)]
        try:
            daemon.start()
        except RuntimeError:
            report.restarts_failed += 1
            break
        with daemon.client(timeout=10) as c:
            for s in sessions:
                history = _whole_history(c, s)
                texts = {m.content for m in history if m.role == "user"}
                report.lost += [t for t, owner in acked.items() if owner == s and t not in texts]
                answered = {m.reply_to for m in history if m.role == "assistant"}
                asked = [m for m in history if m.role == "user" and m.kind == "message"]
                busy = c.session(s).session.busy
                report.unanswered += [f"round {k}: #{m.seq} {m.content[:30]}" for m in asked
                                      if m.seq not in answered and not busy]
        if report.unanswered:
            break
    report.acknowledged = len(acked)
    daemon.stop(signal.SIGTERM)
    report.invariant_failures += [f"at the end: {p}" for p in check(store, settled=True)]
    return report


def _whole_history(c, sid: str) -> list:
    out, start = [], 0
    while True:
        page = c.history(sid, start=start, limit=1000)
        out += page.messages
        if page.next is None:
            return out
        start = page.next
