"""Counts asked of the model server before a prompt is sent (backends/openai_count.py), in
the engine: where the server can count (llama.cpp's server, vLLM), a prompt the estimate
says will not fit is measured before anything is refused or compacted."""

import asyncio
import random

from ctxkeep.daemon.backends.configured import backend_for
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.config.backends import BackendConfig
from ctxkeep.daemon.tokens import text_features
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionRequest, GenerationError, ResponseGeneration
from inprocess import InProcess
from memory_backend import MemoryBackend
from ollama_standin import OllamaStandin, count_tokens_bpe

MODEL = "qwen2.5:7b"
PROSE = "The quick brown fox jumps over the lazy dog near the river bank, said Maria."
WORDS = ["The", "river", "garden", "kitchen", "walked", "slowly", "under", "bright", "autumn", "trees",
         "while", "friends", "talked", "about", "plans", "for", "winter", "and", "spring."]


def _ends(app: InProcess) -> dict:
    return {e.generation_id: e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))}


def test_a_prompt_the_estimate_refuses_is_measured_by_the_server_and_sent_when_it_fits(tmp_path):
    """A fresh store over-counts (the cautious prior, +53 % here): the server's count says
    the message fits, so it is sent, uncompacted, and that count calibrates the estimates;
    one that cannot fit even by the estimate's lower bound is refused unasked, never sent."""
    backend = MemoryBackend(count=count_tokens_bpe)
    backend.counts = True
    app = InProcess(tmp_path, backend)
    text = " ".join([PROSE] * 40)

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        assert app.services.estimator.text(MODEL, text) > 1024 - 128  # the prior says it cannot fit
        assert not app.services.estimator.calibrated(MODEL)
        first = (await app.call(requests.Send(session=sid, text=text))).generation_id
        await app.services.jobs.drain(30)
        fresh = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        huge = (await app.call(requests.Send(session=fresh, text=text * 3))).generation_id
        await app.services.jobs.drain(30)
        return first, huge
    try:
        first, huge = asyncio.run(go())
        ends = _ends(app)
        assert isinstance(ends[first], ResponseGeneration)
        assert backend.counted[0] == backend.chats[0][0]  # the prompt measured is the prompt sent
        assert isinstance(ends[huge], GenerationError) and ends[huge].code == "context_overflow"
        assert len(backend.chats) == 1 and len(backend.counted) == 1  # refused unasked, not sent
        seen = [e for e in app.bus.seen if isinstance(e, (CompactionRequest, ResponseGeneration))]
        assert isinstance(seen[0], ResponseGeneration)  # nothing compacted to make it fit
    finally:
        app.close()


def test_without_a_server_count_the_estimate_decides_as_before(tmp_path):
    """Ollama cannot count before answering: nothing is asked, and the same message is
    sent on the lower bound of its estimate (test_estimates.py), the server's count after."""
    backend = MemoryBackend(count=count_tokens_bpe)
    app = InProcess(tmp_path, backend)

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        gid = (await app.call(requests.Send(session=sid, text=" ".join([PROSE] * 40)))).generation_id
        await app.services.jobs.drain(30)
        return gid
    try:
        gid = asyncio.run(go())
        assert isinstance(_ends(app)[gid], ResponseGeneration)
        assert backend.counted == []
    finally:
        app.close()


def test_a_big_message_the_raised_estimate_calls_impossible_is_measured_and_answered(tmp_path):
    """Issue 41, the 2,048 scenario: after a long turn, a ~1,400-token message of a kind
    the estimator has not seen (its estimate raised by the uncalibrated margin says even
    the least prompt cannot fit) is measured by the server: the least prompt fits, so the
    context is compacted and the message answered, not refused."""
    backend = MemoryBackend(count=count_tokens_bpe)
    backend.counts = True
    app = InProcess(tmp_path, backend)
    rng = random.Random(3)
    big = " ".join(rng.choice(WORDS) for _ in range(1200))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        gids = []
        for text in ["Hello there, how are you?", " ".join([PROSE] * 50), big]:
            if text is big:  # the estimate raised by its error says it cannot fit at all
                estimator = app.services.estimator
                assert estimator.raised(MODEL, estimator.unanchored(MODEL, text_features(big))) + 256 > 2048
            gids.append((await app.call(requests.Send(session=sid, text=text))).generation_id)
            await app.services.jobs.drain(30)
        return gids
    try:
        gids = asyncio.run(go())
        ends = _ends(app)
        assert all(isinstance(ends[g], ResponseGeneration) for g in gids), [ends[g] for g in gids]
        assert backend.counted and backend.counted[-1][-1]["content"] == big  # the least prompt, measured
        assert ends[gids[-1]].token_count + 256 <= 2048
    finally:
        app.close()


def test_a_fresh_stores_first_message_to_ollama_is_measured_and_answered(tmp_path):
    """Issue 41, over Ollama's own API (the stand-in, real HTTP): a fresh store's prior says
    a first message cannot fit a 1,024 window; the server reads the prompt for one token,
    with the chat's window, and its count says it fits: answered, never cut or refused."""
    standin = OllamaStandin(tokenizer="bpe").start()
    config = Config(num_ctx=1024, backends=[BackendConfig(name="here", kind="ollama", url=standin.url)])
    app = InProcess(tmp_path, backend_for(config), config)
    text = " ".join([PROSE] * 40)

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        assert app.services.estimator.text(MODEL, text) > 1024 - 128  # the prior says it cannot fit
        gid = (await app.call(requests.Send(session=sid, text=text))).generation_id
        await app.services.jobs.drain(30)
        await app.backend.close()
        return gid
    try:
        gid = asyncio.run(go())
        reading, answered = standin.chats
    finally:
        standin.stop()
        app.close()
    assert isinstance(_ends(app)[gid], ResponseGeneration)
    assert reading.body["options"]["num_predict"] == 1 and reading.num_ctx == answered.num_ctx == 1024
    assert reading.prompt_tokens == answered.prompt_tokens == _ends(app)[gid].token_count
    assert standin.truncations == [] and standin.refusals == []
