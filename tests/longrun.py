"""A long scripted conversation through the real daemon (the long-run test and bench/longrun.py).

A 4,096-token window, prose and code, a goal and a locked decision set by
markers in the first answer, a pinned answer, and now and then a full @file
reference. Every invariant of automatic compaction is checked as it runs.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ctxkeep.protocol.events import (
    CompactionResult,
    ContextWarning,
    ResponseGeneration,
)

WORDS = ("parser token grammar buffer cache index schema query latency thread socket queue "
         "memory budget window summary checkpoint context model answer question design test "
         "release deploy config module function class method value error retry timeout file").split()
GOAL = ("[GOAL] Build the ingestion pipeline\n"
        "[DECISION] Keep every record in LMDB - LOCKED\n"
        "[CHECKPOINT] Sketch the stages - COMPLETED\n[NEXT] Write the reader")
LOCKED = "Keep every record in LMDB"


@dataclass
class Report:
    turns: int = 0
    seconds: float = 0.0
    by_level: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    user_summaries: int = 0
    #: Every automatic compaction result, one line each (for reading a violation).
    trace: list[str] = field(default_factory=list)
    fills_after: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def _text(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
    if i % 7 == 3:
        return f"Step {i}: what about this code?\n```python\ndef step_{i}(x):\n    return x * {i}\n```\n{words}"
    return f"Step {i}: {words}."


def run(daemon, standin, workdir: Path, turns: int = 2000, window: int = 4096, seed: int = 1) -> Report:
    rng = random.Random(seed)
    (workdir / "notes.py").write_text("\n".join(f"def helper_{i}(value):\n    return value + {i}\n"
                                                for i in range(40)))
    standin.reply_fn = lambda msgs: " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 50))) + "."
    standin.script(GOAL)
    report = Report()
    started = time.monotonic()
    with daemon.client(timeout=30) as c:
        c.subscribe("")
        s = c.create_session(model="small:1b", num_ctx=window, system="You are a careful engineer.").session
        pinned = None
        users: set[int] = set()
        fold_seen = False
        for i in range(turns):
            text = _text(rng, i) + (" See @notes.py:full" if i % 40 == 5 else "")
            acc = c.send(s.id, text, cwd=str(workdir))
            last_after = None

            def seen(event) -> None:  # the turn's events, then the compaction after it
                nonlocal last_after, users, fold_seen
                if isinstance(event, ContextWarning) and event.kind == "user_summary":
                    report.user_summaries += 1
                    fold_seen = True
                elif isinstance(event, CompactionResult) and event.level:
                    report.trace.append(f"turn {i}: level {event.level} {event.status} "
                                        f"{event.tokens_before}->{event.tokens_after} {event.reason[:120]}")
                    if event.status == "ok":
                        report.by_level[event.level] += 1
                        last_after = event.tokens_after
                        now = {m.seq for m in c.history(s.id, active=True, limit=1000).messages
                               if m.role == "user"}
                        lost = users - now
                        if lost and not fold_seen:
                            report.violations.append(f"turn {i}: user messages {sorted(lost)[:5]} left "
                                                     "the active context without a shown summary")
                        users, fold_seen = now, False
                    else:
                        report.skipped[event.level] += 1
            try:
                end = c.follow(acc.generation_id, seen, session=s.id, timeout=60)
                if isinstance(end, ResponseGeneration):
                    report.prompt_tokens.append(end.token_count)
                    users.add(end.message.reply_to)
                else:
                    report.violations.append(f"turn {i}: {end.code}: {end.message}")
                # after the answer, automatic compaction runs in the same job: until the session is idle
                c.settle(s.id, seen, timeout=60)
            except TimeoutError:
                report.violations.append(f"turn {i}: the turn did not end within 60 s")
            if last_after is not None:  # the state once this turn's compactions are all done
                report.fills_after.append(last_after / window)
                if last_after > 0.8 * window:
                    report.violations.append(f"turn {i}: {last_after} tokens after compaction, "
                                             f"over 80 % of the {window}-token window")
            if i == 0:
                pinned = c.history(s.id, limit=2).messages[-1].seq
                c.pin(s.id, pinned)
            report.turns = i + 1
        report.seconds = time.monotonic() - started
        active = c.history(s.id, active=True, limit=1000).messages
        if pinned is not None and pinned not in [m.seq for m in active]:
            report.violations.append("the pinned message left the active context")
        goals = c.goals(s.id).goals
        if goals.goal != "Build the ingestion pipeline" or not any(
                d.description == LOCKED and d.locked for d in goals.decisions):
            report.violations.append(f"the goal record changed: {goals}")
        total = c.history(s.id, limit=1).total
        if total != 2 * turns:
            report.violations.append(f"history holds {total} messages, not {2 * turns}")
    chats = [ch for ch in standin.chats if ch.body.get("stream", True)]
    for n, chat in enumerate(chats[1:], 1):
        system = chat.body["messages"][0]["content"]
        if "ACTIVE GOAL: Build the ingestion pipeline" not in system or LOCKED not in system:
            report.violations.append(f"prompt {n} lacks the goal or the locked decision")
            break
    if standin.truncations or standin.refusals:
        report.violations.append(f"Ollama truncated {len(standin.truncations)} and refused "
                                 f"{len(standin.refusals)} prompts")
    return report
