"""The small-window scenarios of a new user, on the real model (Gemma 3 270M on llama.cpp's
server with a 2,048-token window): a long first answer in 1,024 and 2,048 windows, then
messages of 1,100 to 1,700 tokens in 2,048. No answer is capped by ctxkeepd's options here
(only `answer_max_share`), every turn is answered, no request is refused by the server, and
each prompt and its answer fit the window together: no dead ends, no false refusals."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import wait_terminal
from ctxkeep.protocol.events import ResponseGeneration
from harness import DaemonThread
from real_model import MODEL, recorded_llama, served, skip_without_a_real_model
from recording_proxy import RecordingProxy

pytestmark = skip_without_a_real_model

WINDOW = 2048
WORDS = ["The", "river", "garden", "kitchen", "walked", "slowly", "under", "bright", "autumn", "trees",
         "while", "friends", "talked", "about", "plans", "for", "winter", "and", "spring."]


@pytest.fixture(scope="module")
def proxy() -> Iterator[RecordingProxy]:
    yield from recorded_llama(WINDOW)


@pytest.fixture
def daemon(short_tmp: Path, proxy: RecordingProxy) -> Iterator[DaemonThread]:
    d = served(short_tmp, proxy, WINDOW)
    yield d
    d.stop()


def turns(daemon: DaemonThread, sid: str, texts: list[str]) -> list[ResponseGeneration]:
    """Each text sent in turn: the terminal events (failures asserted away)."""
    ends = []
    with daemon.client() as client:
        client.subscribe("")
        for text in texts:
            end, _ = wait_terminal(client, client.send(sid, text).generation_id, timeout=600)
            assert isinstance(end, ResponseGeneration), end
            ends.append(end)
    return ends


def streamed(proxy: RecordingProxy) -> list[dict]:
    return [e.body for e in proxy.exchanges if e.body.get("stream")]


@pytest.mark.parametrize("window", [1024, 2048])
def test_a_long_first_answer_leaves_room_for_the_next_questions(daemon, proxy, window):
    with daemon.client() as client:
        sid = client.create_session(model=MODEL, num_ctx=window).session.id
    ends = turns(daemon, sid, ["Say hello in French, and then tell me everything about France, at length.",
                               "Thank you. Now say goodbye in Spanish.", "And in Italian?"])
    assert all(e.status < 400 for e in proxy.exchanges), [e.status for e in proxy.exchanges]
    for end, sent in zip(ends, streamed(proxy)[-3:]):
        assert end.eval_count <= window // 4 + 1, "an answer takes at most answer_max_share of the window"
        assert end.token_count + sent["max_tokens"] <= window
        assert end.next_tokens >= end.token_count, "the count shown includes the answer just written"


def test_messages_of_1100_to_1700_tokens_in_2048_are_answered(daemon, proxy):
    rng = random.Random(13)
    with daemon.client() as client:
        sid = client.create_session(model=MODEL, num_ctx=WINDOW).session.id
    texts = [f"In one sentence, what is this about? {' '.join(rng.choice(WORDS) for _ in range(n))}"
             for n in (930, 1180, 1420)]
    ends = turns(daemon, sid, ["Hello! Say hi back in three words.", *texts])
    assert all(e.status < 400 for e in proxy.exchanges), [e.status for e in proxy.exchanges]
    big = [end.token_count for end in ends[1:]]
    assert min(big) >= 1100 and max(big) <= WINDOW, big
    for end, sent in zip(ends, streamed(proxy)[-len(ends):]):
        assert end.token_count + sent["max_tokens"] <= WINDOW
