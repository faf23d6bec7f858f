"""Recall on the real model (Gemma 3 270M on llama.cpp's server, answers capped at 40
tokens): an early fact that compaction set aside — a number planted in turn 1 — is in the
prompt of the question that asks for it at the end (recalled, or kept by its checkpoint). A 2,048 window: in 1,024, the verbatim tail, the user's own messages and
the checkpoints leave recall 20–60 tokens on some turns (docs/performance.md)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxkeep.protocol.events import GenerationRecalled, ResponseGeneration
from harness import DaemonThread
from real_model import MODEL, question, recorded_llama, run_turns, served, skip_without_a_real_model, streamed
from recording_proxy import RecordingProxy

pytestmark = skip_without_a_real_model

WINDOW = 2048


@pytest.fixture(scope="module")
def proxy() -> Iterator[RecordingProxy]:
    yield from recorded_llama(WINDOW)


@pytest.fixture
def real(short_tmp: Path, proxy: RecordingProxy) -> Iterator[DaemonThread]:
    d = served(short_tmp, proxy, WINDOW, default_options={"num_predict": 40})
    yield d
    d.stop()


def _holding(real, sid: str, text: str) -> list[tuple]:
    """The active messages that hold `text`: where, who, how long, and their start."""
    with real.client() as client:
        active = client.history(sid, limit=1000, active=True).messages
    return [(m.seq, m.role, m.kind, len(m.content), m.content[:80]) for m in active if text in m.content]


def _usage(real, sid: str) -> str:
    """The session's usage and its checkpoints, for a failure message."""
    with real.client() as client:
        reply = client.usage(sid)
    return f"{reply.usage!r} checkpoints={[(c.age, c.current_tokens, c.first_seq, c.last_seq) for c in reply.checkpoints]}"


def test_recall_brings_an_early_fact_back_into_the_prompt(real, proxy):
    """A fact said once, set aside by compaction (the message itself, not only a summary
    that may repeat it), is recalled into the prompt of the question that needs it."""
    rng = random.Random(9)
    with real.client() as client:
        sid = client.create_session(model=MODEL).session.id
    ends = run_turns(real, sid, ["Please remember this: my locker code is 4711-blue."])

    def still_active() -> bool:
        """Whether the message itself is still in the active context (a summary that
        repeats the code does not count: recall is what is tested)."""
        with real.client() as client:
            active = client.history(sid, limit=1000, active=True).messages
        return "4711-blue" in json.dumps([m.content for m in active if m.kind == "message"])
    for t in range(60):  # until compaction sets the fact aside (in large steps: compaction_min_step)
        ends += run_turns(real, sid, [question(t, rng)])
        if t >= 10 and not still_active():
            break
    assert not still_active(), ("set aside by compaction", _holding(real, sid, "4711-blue"))
    ends += run_turns(real, sid, ["What is my locker code?"])
    assert all(isinstance(e, ResponseGeneration) for e, _ in ends), [
        (len(e.body["messages"]), e.body.get("max_tokens"), e.status, e.raw[-300:]) for e in proxy.exchanges
        if b"finish_reason\": \"" not in e.raw][:3]
    last_end, last_events = ends[-1]
    recalled = [e for e in last_events if isinstance(e, GenerationRecalled)]
    prompt = streamed(proxy)[-1]["messages"]
    # the planted number: recalled from the message itself, or kept word for word by the
    # checkpoint that replaced it (a summary that dropped it was asked again, then made of
    # the user's own sentence: compaction/fact_check.py)
    # (the checkpoints open the prompt: in its system message, or, where the model's chat
    # template drops system messages as Gemma's does, at the start of its first message)
    kept = bool(prompt) and "4711-blue" in prompt[0]["content"] and "Summary of the earlier conversation" in \
        prompt[0]["content"]
    assert (kept or any("4711-blue" in p.text for e in recalled for p in e.recalled)) \
        and "4711-blue" in json.dumps(prompt), (
        "recall put the early turn back", last_end.token_count, streamed(proxy)[-1].get("max_tokens"),
        _usage(real, sid),
        [(e.tokens, [p.text[:60] for p in e.recalled]) for e in recalled])
