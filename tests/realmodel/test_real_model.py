"""ctxkeepd against a real model and a real tokenizer (llama.cpp's server, Gemma 3 270M, a
1,024-token window), through the recording proxy: every count is checked against what the
server itself reported (`usage.prompt_tokens`), and the figures (exact-count agreement,
the estimator's error after calibration, turns per second) are printed at the end of the
run as JSON lines (docs/performance.md keeps them)."""

from __future__ import annotations

import json
import random
import time

import pytest

from ctxkeep.protocol.events import GenerationToken, ResponseGeneration
from real_model import MODEL, WINDOW, question, run_turns, skip_without_a_real_model, streamed
from recording_proxy import RecordingProxy

pytestmark = skip_without_a_real_model

FIGURES: list[dict] = []


def pytest_terminal_summary_lines() -> list[str]:
    return [json.dumps(f) for f in FIGURES]


def server_count(proxy: RecordingProxy, body: dict) -> int | None:
    """What the server said the prompt of `body` costs: its streamed answer's usage, else
    the usage of the count asked for the same messages (llama-cpp-python's server leaves
    usage out of streams)."""
    for e in proxy.exchanges:
        if e.body["messages"] == body["messages"] and e.usage:
            return int(e.usage["prompt_tokens"])
    return None


def test_turns_stream_with_the_servers_exact_count(real, proxy):
    with real.client() as client:
        sid = client.create_session(model=MODEL).session.id
    ends = run_turns(real, sid, ["Hello! Name three colors.", "Now name three animals.",
                                        "And three fruits, please."])
    for (end, events), sent in zip(ends, streamed(proxy)):
        assert isinstance(end, ResponseGeneration), end
        assert [e for e in events if isinstance(e, GenerationToken)] or end.eval_count == 0
        assert end.token_count == server_count(proxy, sent) and end.token_count_exact
        assert end.host == "llama" and end.window == WINDOW


def test_a_60_turn_chat_in_a_1024_window_is_never_refused_or_cut(real, proxy):
    rng = random.Random(5)
    with real.client() as client:
        sid = client.create_session(model=MODEL).session.id
    started = time.monotonic()
    ends = run_turns(real, sid, [question(t, rng) for t in range(60)])
    seconds = time.monotonic() - started
    failed = [e for e, _ in ends if not isinstance(e, ResponseGeneration)]
    assert not failed, failed[:3]
    assert all(e.status < 400 for e in proxy.exchanges), [e.status for e in proxy.exchanges]
    turns = streamed(proxy)
    exact = [e.token_count == server_count(proxy, sent) for (e, _), sent in zip(ends, turns)]
    assert all(exact)
    for sent, (end, _) in zip(turns, ends):  # prompt and answer fit the window together
        assert end.token_count + sent["max_tokens"] <= WINDOW
    set_aside = _set_aside(real, sid)
    _one_number(real, sid)
    errors = [abs(e.prompt_estimate - e.token_count) / e.token_count for e, _ in ends[10:]]
    FIGURES.append({"figure": "realmodel_60_turns", "model": MODEL, "window": WINDOW, "turns": len(ends),
                    "exact_count_agreement": sum(exact) / len(exact), "refused": 0, "cut": 0,
                    "messages_set_aside": set_aside, "estimator_error_mean": round(sum(errors) / len(errors), 4),
                    "estimator_error_max": round(max(errors), 4), "turns_per_s": round(len(ends) / seconds, 3)})
    assert set_aside > 0, "a 60-turn chat in a 1,024 window compacts"


def _one_number(real, sid: str) -> None:
    """One number for the window (issue 41) on the real model: once the session is idle
    (any compaction after the last answer done), what the gauge and `sessions` show is what
    `/usage` shows: what the next prompt holds (the last answer in, the last recall block out)."""
    with real.client() as client:
        deadline = time.monotonic() + 300
        while client.session(sid).session.busy and time.monotonic() < deadline:
            time.sleep(0.2)
        session = client.session(sid).session
        usage = client.usage(sid).usage
    assert not session.busy
    assert session.next_tokens == usage.next_tokens, (session.next_tokens, usage.next_tokens)
    assert 0 < usage.next_tokens <= WINDOW


def _set_aside(real, sid: str) -> int:
    """Messages compaction took out of the active context (all stay in history)."""
    with real.client() as client:
        everything = client.history(sid, limit=1000).messages
        active = client.history(sid, limit=1000, active=True).messages
    return len([m for m in everything if m.kind == "message"]) - len([m for m in active if m.kind == "message"])


def test_big_messages_on_a_fresh_store_are_measured_not_refused(real, proxy):
    """A fresh store has no exact count yet, and its prior over-counts Gemma's tokenizer:
    a ~400-token first message into the 1,024 window, then messages that each take half
    of it, are measured by the server before anything is refused or compacted, and all
    are answered (the issue saw the first refused 3 times of 3)."""
    rng = random.Random(11)
    paragraph = lambda n: " ".join(rng.choice(
        ["The", "river", "garden", "kitchen", "walked", "slowly", "under", "bright", "autumn", "trees",
         "while", "friends", "talked", "about", "plans", "for", "winter", "and", "spring."]) for _ in range(n))
    with real.client() as client:
        sid = client.create_session(model=MODEL).session.id
    texts = [f"Summarize this in one sentence: {paragraph(330)}"] + \
        [f"And this one, in one sentence: {paragraph(420)}" for _ in range(3)]
    ends = run_turns(real, sid, texts)
    assert all(isinstance(e, ResponseGeneration) for e, _ in ends), [e for e, _ in ends]
    first = streamed(proxy)[0]
    assert 350 <= server_count(proxy, first) <= 1024 - 128
    assert all(e.status < 400 for e in proxy.exchanges), [e.status for e in proxy.exchanges]


def test_the_http_front_door_on_the_real_model(real, proxy):
    import openai
    client = openai.OpenAI(base_url=f"{real.http.url}/v1", api_key="none", max_retries=0)
    stream = client.chat.completions.create(model=MODEL, stream=True, stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": "Say hi."}])
    pieces, usage = [], None
    for chunk in stream:
        pieces += [c.delta.content or "" for c in chunk.choices]
        usage = chunk.usage or usage
    assert usage is not None and usage.prompt_tokens == server_count(proxy, streamed(proxy)[-1])
    assert MODEL in [m.id for m in client.models.list().data]


@pytest.fixture(autouse=True, scope="module")
def _report():
    yield
    for line in pytest_terminal_summary_lines():
        print(f"\nFIGURES {line}")
