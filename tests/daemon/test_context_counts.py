"""Context accounting through the real daemon and the stand-in: counts after turns equal the
model's, estimates within 5 % on prose and code, a prompt over the window never sent, a
10,000-message import compacted and continued."""

from pathlib import Path

import pytest

from compaction_steps import (
    MODEL,
    compact,
    converse,
)
from conftest import wait_terminal
from ctxkeep.protocol.events import (
    GenerationError,
    ResponseGeneration,
)
from harness import DaemonThread

REPO = Path(__file__).resolve().parents[2]
PROSE = [p for p in (REPO / "README.md").read_text().split("\n\n") if len(p) > 120]
CODE = [c for f in sorted((REPO / "daemon").glob("*.py"))
        for c in f.read_text().split("\n\n\n") if len(c) > 120]


@pytest.fixture
def daemon(short_tmp, standin):
    """Automatic compaction off: what is counted and refused is the prompt as the turns left it."""
    d = DaemonThread(short_tmp, standin.url, auto_compaction=False).start()
    yield d
    d.stop()


@pytest.fixture
def session(client):
    return client.create_session(model=MODEL, system="You are helpful.").session


def test_counts_after_turns_equal_the_models(client, standin, session):
    ends = converse(client, session.id, 5)
    chats = [c for c in standin.chats if c.body.get("stream", True)]
    assert [e.token_count for e in ends] == [c.prompt_tokens for c in chats]
    assert client.session(session.id).session.token_count == ends[-1].token_count
    usage = client.usage(session.id).usage
    assert usage.exact and usage.tokens == ends[-1].token_count
    seg = usage.segments
    assert seg.system + seg.pinned + seg.files + seg.summaries + seg.recent == usage.tokens
    assert seg.system > 0 and seg.recent > 0


def test_estimate_within_5_percent_on_prose_and_code(client, standin):
    s = client.create_session(model=MODEL, num_ctx=32768).session
    standin.reply_fn = lambda msgs: CODE[len(msgs) % len(CODE)][:900]
    ends = converse(client, s.id, 24,
                    text=lambda i: (PROSE if i % 2 else CODE)[i % (len(PROSE) if i % 2 else len(CODE))][:700])
    errors = [abs(e.prompt_estimate - e.token_count) / e.token_count for e in ends[4:]]
    assert max(errors) < 0.05, errors


def test_prompt_over_the_window_is_never_sent(client, standin):
    s = client.create_session(model=MODEL, num_ctx=512).session
    calls = len(standin.chats)
    acc = client.send(s.id, "word " * 2000)
    end, _ = wait_terminal(client, acc.generation_id)
    assert isinstance(end, GenerationError) and end.code == "context_overflow"
    assert "send less" in end.message and "raise num_ctx" in end.message
    assert len(standin.chats) == calls  # refused before any call, and before any compaction
    assert not [c for c in client.snapshots(s.id).snapshots]


@pytest.mark.early
def test_a_big_imported_conversation_is_compacted_and_continued(short_tmp, standin):
    """An import of 10,000 messages (in the CLI's batches) into an 8,192 window, after
    another session's turns of one word repeated (which skewed the estimates before), then
    `compact` and a question: the summary calls all fit (counted by a tokenizer the
    estimator was not built around), the question is answered, nothing was cut. (Automatic
    compaction on, unlike this module's other daemons.)"""
    import random

    from ctxkeep.clients.cli.transfer import batches, imported_messages
    rng = random.Random(4)
    words = ("plan module session answer question budget design parser refactor window "
             "history estimate decision because however meanwhile the of and to").split()
    standin.tokenizer = "bpe"

    def reply(messages):
        last = messages[-1]["content"]
        if last.startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            return "Summary: " + " ".join(rng.choice(words) for _ in range(30))
        return "An answer about the plan."
    standin.reply_fn = reply
    conversation = [{"role": "user" if i % 2 == 0 else "assistant",
                     "content": " ".join(rng.choice(words) for _ in range(rng.randint(8, 50))) + "."}
                    for i in range(10_000)]

    def imported(client, messages: list[dict], **fields) -> str:
        parts = batches(imported_messages(messages))
        sid = client.import_session(model=MODEL, messages=parts[0], **fields).session.id
        for part in parts[1:]:
            client.import_session(session=sid, messages=part)
        return sid

    def answer(client, sid: str, text: str) -> str:
        end, _ = wait_terminal(client, client.send(sid, text).generation_id, timeout=60)
        assert isinstance(end, ResponseGeneration), end
        return end.message.content
    daemon = DaemonThread(short_tmp, standin.url, default_model=MODEL).start()
    try:
        with daemon.client(timeout=60) as client:
            client.subscribe("")
            other = client.create_session(model=MODEL, name="other").session.id
            for _ in range(6):
                answer(client, other, " ".join(["hello"] * 40))
            big = imported(client, conversation, name="big", num_ctx=8192)
            assert compact(client, big)[-1].status == "ok"
            assert answer(client, big, "what did we decide?") == "An answer about the plan."
            # and with no `compact`: the question's own automatic pass makes it fit (it
            # compacted 202K to 134K tokens and refused before)
            big2 = imported(client, conversation[:4000], name="big2")
            assert answer(client, big2, "what did we decide?") == "An answer about the plan."
    finally:
        daemon.stop()
    assert not standin.truncations and not standin.refusals


def test_undoing_a_manual_compaction_keeps_the_exact_count(client, standin):
    """Issue 41, item 9: the prompt after an undo is the one counted before the compaction:
    its exact count stands (an estimate only once something it holds changed)."""
    sid = client.create_session(model=MODEL).session.id
    ends = converse(client, sid, 6)
    before = client.session(sid).session
    assert before.token_count_exact and before.token_count == ends[-1].token_count
    standin.script("Six questions about six topics were asked.")
    assert compact(client, sid)[-1].status == "ok"
    assert not client.session(sid).session.token_count_exact  # compacted: an estimate
    client.restore(sid)  # undo
    after = client.session(sid).session
    assert after.token_count_exact and after.token_count == before.token_count
    assert compact(client, sid)[-1].status == "ok"
    client.set_system(sid, "You are a patient assistant who explains every step at length, " * 3)
    client.restore(sid)  # the prompt now holds a system prompt the count never saw
    assert not client.session(sid).session.token_count_exact
