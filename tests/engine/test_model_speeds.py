"""Issue 42, in the engine: each model's speeds learnt from its answers' timings say how
long a compaction should take (`compaction.progress` `expected_s`), and how long a model
reading a long prompt is waited for."""

import asyncio

from chatter import FILLER
from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionProgress, CompactionResult
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


def test_a_compaction_says_how_long_its_summaries_should_take_at_the_models_speed(tmp_path):
    backend = MemoryBackend(reply=lambda messages: " ".join(FILLER[:12]))
    backend.ns_per_read, backend.ns_per_write = 2_000_000, 50_000_000  # 500 and 20 tokens a second
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, recall=False))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        for i in range(60):
            await app.call(requests.Send(session=sid, text=f"{i}: " + " ".join(FILLER[i % 7:i % 7 + 20])))
            await app.services.jobs.drain(30)
            if any(isinstance(e, CompactionResult) and e.status == "ok" and e.level == 3 for e in app.bus.seen):
                return
    try:
        asyncio.run(go())
        speed = app.services.speeds.of(MODEL)
        assert round(speed.read) == 500 and round(speed.write) == 20
        progress = [e for e in app.bus.seen if isinstance(e, CompactionProgress)]
        starts = [e for e in progress if e.step == 0]
        assert starts and all(e.expected_s is not None and e.expected_s > 1 for e in starts), progress[:3]
        assert all(e.expected_s is not None and e.expected_s <= s.expected_s for e, s in zip(progress[1:], starts))
        assert progress[-1].step == progress[-1].steps
    finally:
        app.close()


def test_a_model_measured_slow_is_waited_for_and_the_wait_says_how_long_reading_takes(tmp_path):
    """first_token_timeout is 1 s here; the model reads 20 tokens a second, so a prompt of
    ~100 tokens should take ~5 s: the turn that waits 3.5 s for its first token is not
    given up, and its waiting line says what reading should take."""
    from ctxkeep.protocol.events import GenerationError, GenerationWaiting, ResponseGeneration
    backend = MemoryBackend()
    backend.ns_per_read = 50_000_000
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, recall=False, first_token_timeout=1.0))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=4096))).session.id
        await app.call(requests.Send(session=sid, text=" ".join(FILLER[:40])))
        await app.services.jobs.drain(30)
        backend.hold()
        gid = (await app.call(requests.Send(session=sid, text=" ".join(FILLER[5:45])))).generation_id
        await asyncio.sleep(3.5)
        backend.release()
        await app.services.jobs.drain(30)
        return gid
    try:
        gid = asyncio.run(go())
        ends = [e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))
                and e.generation_id == gid]
        assert isinstance(ends[0], ResponseGeneration), ends
        waits = [e.message for e in app.bus.seen if isinstance(e, GenerationWaiting) and e.generation_id == gid]
        assert waits and "at 20 tokens/s here" in waits[0], waits
    finally:
        app.close()
