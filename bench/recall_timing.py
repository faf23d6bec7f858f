"""How long recall takes per turn over a session of many stored messages (bench/recall.py
prints it for 10,000 and 100,000: goal p50 ≤ 15 ms at 10,000 and ≤ 50 ms at 100,000)."""

import asyncio
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import conversations

MODEL = "qwen2.5:7b"


async def recall(recaller, session, context, active, user) -> None:
    """One turn's recall: what the message asks, then the passages within 2,000 tokens."""
    asked = await recaller.ask(session, context, active, user)
    if asked is not None:
        await recaller.recall(session, context, active, asked, 2000)


def time_recall(messages: int, turns_timed: int = 30) -> dict[str, float]:
    """Recall's own time per turn (index kept, as between turns) over a session of
    `messages` stored messages, in-process over the real store."""
    from ctxkeep.daemon.store.records import NewMessage
    from ctxkeep.protocol import requests
    from inprocess import InProcess
    from memory_backend import MemoryBackend
    root = Path(tempfile.mkdtemp(prefix="ckrt", dir="/tmp"))
    app = InProcess(root, MemoryBackend())
    conversation = conversations.generate(7, messages // 2)
    try:
        async def go() -> list[float]:
            sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=8192))).session.id
            batch = []
            for t in conversation.turns:
                batch += [NewMessage(role="user", content=t.user), NewMessage(role="assistant", content=t.assistant)]
            app.store.history.append(sid, batch)  # history only: nothing active, everything a candidate
            session, context, active = app.store.history.view(sid)
            recaller = app.services.recaller
            rng = random.Random(1)
            user = NewMessage(role="user", content="warm").record(10**9, 0.0)
            await recall(recaller, session, context, active, user)  # builds the index once
            samples = []
            asked = [q.text for q in conversation.questions] + [t.user for t in conversation.turns[:200]]
            for _ in range(turns_timed):
                q = rng.choice(asked)  # questions about facts, and everyday messages
                user = NewMessage(role="user", content=q).record(10**9, 0.0)
                start = time.perf_counter()
                await recall(recaller, session, context, active, user)
                samples.append(time.perf_counter() - start)
            return samples
        samples = asyncio.run(go())
    finally:
        app.close()
        shutil.rmtree(root, ignore_errors=True)
    ordered = sorted(samples)
    return {"p50_ms": round(1000 * statistics.median(ordered), 2),
            "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 2)}
