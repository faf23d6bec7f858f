"""Issue 42: a threshold pass that changed nothing is not tried again on the next turn: it
waits for a reason (each pass re-reads the prompt): passes.worth_retrying."""

import asyncio

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionRequest, CompactionResult
from inprocess import InProcess
from memory_backend import MemoryBackend


def test_a_fruitless_pass_waits_for_the_context_to_grow(tmp_path):
    backend = MemoryBackend(reply=lambda messages: "Noted, thanks.")
    # everything stays within the recent messages kept verbatim: no level can change anything
    app = InProcess(tmp_path, backend, Config(embed_model="", keep_recent_messages=200, recall=False))

    async def go() -> list[int]:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=2048))).session.id
        passes = []
        for i in range(40):
            before = len([e for e in app.bus.seen if isinstance(e, CompactionRequest)])
            await app.call(requests.Send(session=sid, text=f"note {i}: the shed door sticks in wet weather"))
            await app.services.jobs.drain(30)
            passes.append(len([e for e in app.bus.seen if isinstance(e, CompactionRequest)]) - before)
        return passes
    passes = asyncio.run(go())
    app.close()
    results = [e for e in app.bus.seen if isinstance(e, CompactionResult)]
    assert results and all(r.status != "ok" for r in results)  # nothing could be compacted
    tried = [n for n, p in enumerate(passes) if p]
    assert len(tried) >= 2
    assert all(b - a >= 2 for a, b in zip(tried, tried[1:]))  # never on consecutive turns
