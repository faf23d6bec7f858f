"""Manual compaction through the real daemon and the stand-in: its flow seen by two clients,
its record, dry runs, failures, cancels and kills, chunks then merges, undo."""

import re
import signal

import pytest

from compaction_steps import (
    MODEL,
    active,
    assert_valid_prompt,
    compact,
    compaction_events,
    converse,
    full_history,
)
from conftest import events_until, wait_for
from ctxkeep.clients import CtxkeepError
from ctxkeep.daemon.compaction.prompts import COMPACTION_SYSTEM
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol.events import (
    CompactionProgress,
    CompactionRequest,
    CompactionResult,
    GenerationError,
    ResponseGeneration,
)
from harness import DaemonThread

MARKER = re.compile(r"^── compacted: [\d,]+ → ~[\d,]+ tokens \([\d,]+ freed\) ──$")


@pytest.fixture
def daemon(short_tmp, standin):
    """Manual compaction on its own (automatic compaction is tested in test_autocompact.py),
    the daemon in a thread of this process (a process only where one is killed)."""
    d = DaemonThread(short_tmp, standin.url, auto_compaction=False).start()
    yield d
    d.stop()


@pytest.fixture
def daemon_process(daemon_factory):
    d = daemon_factory()
    d.write_config("auto_compaction = false\n")
    return d.start()


@pytest.fixture
def session(client):
    return client.create_session(model=MODEL, system="You are helpful.").session


def test_compaction_flow_seen_by_two_clients(daemon, standin):
    with daemon.client() as a, daemon.client() as b:
        a.subscribe("")
        b.subscribe("compaction.")
        s = a.create_session(model=MODEL, system="Be brief.").session
        ends = converse(a, s.id, 8)
        before = full_history(a, s.id)
        standin.script("The user asked eight numbered questions about topics 0 to 7.")
        acc = a.compact(s.id, tail_turns=2, requested_by="test")
        seen_a = compaction_events(a, acc.compaction_id)
        seen_b = compaction_events(b, acc.compaction_id)
        assert [type(e) for e in seen_a] == [CompactionRequest, CompactionProgress, CompactionProgress,
                                             CompactionResult]
        assert [e.seq for e in seen_a] == [e.seq for e in seen_b]
        request, start, _, result = seen_a
        assert start.step == 0 and "summarizing 1 part(s)" in start.detail
        assert request.requested_by == "test" and request.tokens_before == ends[-1].token_count
        assert request.messages == 12
        assert result.status == "ok" and MARKER.match(result.marker), result.marker
        assert result.tokens_before == ends[-1].token_count
        assert result.tokens_freed == result.tokens_before - result.tokens_after > 0
        assert (result.summarized, result.kept) == (12, 4)

        call = standin.chats[-1].body
        assert call["stream"] is False and not call.get("tools")  # a summary offers no tools
        # after the conversation as the last turn sent it (the model's server holds it): one request
        assert call["messages"][0] == {"role": "system", "content": "Be brief."}
        assert "Question 0" in call["messages"][1]["content"] and call["messages"][-2]["role"] == "assistant"
        assert call["messages"][-1]["content"].startswith("Conversation to summarize")
        assert COMPACTION_SYSTEM in call["messages"][-1]["content"]

        now = active(a, s.id)
        assert now[0].kind == "summary" and now[0].role == "assistant"
        assert now[0].content == "[SUMMARY] The user asked eight numbered questions about topics 0 to 7."
        assert [m.content for m in now[1:]] == [m.content for m in before[-4:]]
        info = a.session(s.id).session
        assert not info.token_count_exact and info.token_count == result.tokens_after
        assert info.compactions == 1
        assert not a.usage(s.id).usage.exact and a.usage(s.id).usage.segments.summaries > 0

        # the history keeps every message, and gains the summary
        after = full_history(a, s.id)
        assert [m.content for m in after[:len(before)]] == [m.content for m in before]
        assert after[-1].kind == "summary"

        # the next turn sends [system, summary, tail, new] and the count is exact again
        (end,) = converse(a, s.id, 1, text=lambda i: "And now?")
        sent = standin.chats[-1].body["messages"]
        assert [m["role"] for m in sent] == ["system", "assistant", "user", "assistant", "user",
                                             "assistant", "user"]
        assert sent[1]["content"].startswith("[SUMMARY] ")
        info = a.session(s.id).session
        assert info.token_count_exact and info.token_count == end.token_count
    assert not standin.truncations and not standin.refusals


def test_compaction_history_is_recorded(daemon, standin):
    with daemon.client() as c:
        c.subscribe("")
        s = c.create_session(model=MODEL).session
        converse(c, s.id, 6)
        (*_, result) = compact(c, s.id, tail_turns=2)
        assert result.status == "ok"
        # a reopened history has the same line, where the summary joined it
        marks = c.history(s.id, limit=1000).compactions
        assert [(m.at, m.marker) for m in marks] == [(result.summary_seq, result.marker)]
        assert c.history(s.id, start=0, limit=result.summary_seq - 1).compactions == []
        assert c.history(s.id, start=0, limit=result.summary_seq).compactions == marks  # just after its last
        assert c.history(s.id, start=result.summary_seq, limit=5).compactions == []  # not twice
    daemon.stop()
    store = Store.open(daemon.root / "data" / "ctxkeep" / "store")
    records = store.context.compactions(s.id)
    store.close()
    assert len(records) == 1
    r = records[0]
    assert (r.level, r.strategy, r.tokens_before, r.tokens_after, r.tokens_freed) == (
        0, "summary", result.tokens_before, result.tokens_after, result.tokens_freed)
    assert r.summary_seq == result.summary_seq and len(r.summarized) == 8 and len(r.kept) == 4


def test_dry_run_changes_nothing(client, standin, session):
    converse(client, session.id, 6)
    before_active = active(client, session.id)
    calls = len(standin.chats)
    plan = client.compaction_plan(session.id, tail_turns=2)
    assert plan.summarize == [m.seq for m in before_active[:8]]
    assert plan.keep == [m.seq for m in before_active[8:]]
    assert plan.tokens_before_exact and plan.tokens_summarized > 0 and plan.calls == 1
    assert plan.tokens_after < plan.tokens_before
    assert active(client, session.id) == before_active
    assert len(standin.chats) == calls
    assert client.session(session.id).session.compactions == 0


def test_nothing_to_compact_is_skipped(client, session):
    converse(client, session.id, 2)
    request, result = compact(client, session.id)  # 2 turns, 4 kept
    assert isinstance(request, CompactionRequest) and request.calls == 0
    assert result.status == "skipped" and "nothing to compact" in result.reason
    assert "nothing to compact" in client.compaction_plan(session.id).skip_reason


@pytest.mark.parametrize("fault, script, reason", [
    ({"kind": "http500"}, None, "ollama_error"),
    (None, "", "empty summary"),
    (None, "word " * 3000, "not smaller"),
])
def test_failed_compaction_changes_nothing(client, standin, session, fault, script, reason):
    converse(client, session.id, 6)
    before = active(client, session.id)
    info = client.session(session.id).session
    if fault:
        standin.fail_next(**fault)
    if script is not None:
        standin.script(script)
    events = compact(client, session.id, tail_turns=1)
    result = events[-1]
    assert result.status == "failed" and reason in result.reason, result.reason
    assert active(client, session.id) == before
    after = client.session(session.id).session
    assert (after.token_count, after.token_count_exact, after.compactions) == (
        info.token_count, True, 0)
    assert not [m for m in full_history(client, session.id) if m.kind == "summary"]


def test_cancel_mid_compaction(client, standin, session):
    converse(client, session.id, 6)
    before = active(client, session.id)
    standin.fail_next("delay", seconds=3.0)
    acc = client.compact(session.id, tail_turns=1)
    while True:
        item = client.next_event(timeout=10)
        if isinstance(item[1], CompactionRequest):
            break
    assert client.cancel(session.id).generation_id == acc.compaction_id
    result = compaction_events(client, acc.compaction_id)[-1]
    assert result.status == "failed" and "cancelled" in result.reason
    assert active(client, session.id) == before


def test_daemon_killed_mid_compaction_loses_nothing(daemon_process, standin):
    daemon = daemon_process
    with daemon.client() as c:
        c.subscribe("")
        s = c.create_session(model=MODEL).session
        converse(c, s.id, 6)
        before = active(c, s.id)
        history = full_history(c, s.id)
        standin.fail_next("delay", seconds=5.0)
        c.compact(s.id, tail_turns=1)
        wait_for(c, CompactionRequest)
    daemon.stop(signal.SIGKILL)
    daemon.start()
    with daemon.client() as c:
        assert active(c, s.id) == before
        assert full_history(c, s.id) == history
        assert c.session(s.id).session.compactions == 0


def test_compaction_waits_for_a_running_generation(client, standin, session):
    converse(client, session.id, 5)
    standin.chunk_delay = 0.02
    standin.script(" ".join(f"w{i}" for i in range(40)))
    gen = client.send(session.id, "a slow answer")
    acc = client.compact(session.id, tail_turns=1)
    assert acc.ahead == 1
    ours = {gen.generation_id, acc.compaction_id}
    seen = events_until(client, lambda e: isinstance(e, CompactionResult)
                        and e.compaction_id == acc.compaction_id, 30, "the compaction's result")
    order = [type(e).__name__ for e in seen
             if isinstance(e, (ResponseGeneration, GenerationError, CompactionRequest, CompactionResult))
             and (getattr(e, "generation_id", None) in ours or getattr(e, "compaction_id", None) in ours)]
    assert order == ["ResponseGeneration", "CompactionRequest", "CompactionResult"]


def test_second_compact_while_one_runs(client, standin, session):
    converse(client, session.id, 6)
    standin.fail_next("delay", seconds=1.0)
    first = client.compact(session.id, tail_turns=1)
    with pytest.raises(CtxkeepError) as err:
        client.compact(session.id, tail_turns=1)
    assert err.value.code == "busy" and "already compacting" in err.value.message
    assert compaction_events(client, first.compaction_id)[-1].status == "ok"


def test_long_history_is_summarized_in_chunks_then_merged(client, standin):
    s = client.create_session(model=MODEL, num_ctx=1024).session
    client.set_model(s.id, auto_compaction=False)
    standin.reply_fn = lambda msgs: "Noted. " + "detail " * 30
    converse(client, s.id, 6, text=lambda i: f"Point {i}: " + "context " * 30)
    standin.reply_fn = None
    events = compact(client, s.id, tail_turns=1)
    request, start, *progress, result = events
    assert request.calls > 2 and result.status == "ok", result.reason
    summary_calls = [c for c in standin.chats if c.body.get("stream") is False  # not a turn's count (one token)
                     and c.body["options"].get("num_predict") != 1]
    # the start, then one progress event per call made (the plan's count is a forecast:
    # merges may take more)
    assert start.step == 0  # (the stand-in answers too fast to measure: expected_s is tested in the engine)
    assert len(progress) == len(summary_calls) >= request.calls - 1
    assert [p.step for p in progress] == list(range(1, len(progress) + 1))
    assert "Summaries of consecutive parts" in summary_calls[-1].body["messages"][1]["content"]
    for call in summary_calls:  # no call overflowed: prompt plus the summary's room fits
        assert call.prompt_tokens + call.body["options"]["num_predict"] <= 1024
    assert not standin.truncations and not standin.refusals


def test_three_compactions_keep_history_and_a_valid_context(client, standin, session):
    originals = []
    for _ in range(3):
        ends = converse(client, session.id, 5,
                        text=lambda i: f"Message {len(originals) + i} with some words in it.")
        originals += [f"Message {len(originals) + i} with some words in it." for i in range(5)]
        originals += [e.message.content for e in ends]
        result = compact(client, session.id, tail_turns=2)[-1]
        assert result.status == "ok", result.reason
    history = [m.content for m in full_history(client, session.id) if m.kind == "message"]
    assert sorted(history) == sorted(originals)
    assert len([m for m in full_history(client, session.id) if m.kind == "summary"]) == 3
    now = active(client, session.id)
    assert [m.kind for m in now].count("summary") == 1 and now[0].kind == "summary"
    converse(client, session.id, 1)
    assert_valid_prompt(standin.chats[-1].body["messages"])
    assert not standin.truncations and not standin.refusals


def test_compaction_model_can_differ(client, standin, session):
    converse(client, session.id, 5)
    client.set_model(session.id, compaction_model="small:1b")
    result = compact(client, session.id, tail_turns=1)[-1]
    assert result.status == "ok"
    assert standin.chats[-1].body["model"] == "small:1b"
    assert client.compaction_plan(session.id).model == "small:1b"


def test_cli_compact_show_active_and_chat(daemon, standin):
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    for i in range(6):
        assert daemon.cli("ask", sid, f"question number {i}").returncode == 0
    dry = daemon.cli("compact", sid, "--tail", "2", "--dry-run")
    assert dry.returncode == 0 and "would summarize 8 messages" in dry.stdout
    standin.script("Six numbered questions were asked.")
    done = daemon.cli("compact", sid, "--tail", "2")
    assert done.returncode == 0, done.stderr
    assert "compacting: summarizing 8 messages" in done.stdout
    assert MARKER.match(done.stdout.strip().splitlines()[-1])
    shown = daemon.cli("show", sid, "--active")
    assert "[summary]" in shown.stdout and "question number 0" not in shown.stdout
    assert "the prompt: ~" in shown.stdout and "1 message as summaries or shortened ~" in shown.stdout  # issue 41.7
    assert "question number 0" in daemon.cli("show", sid).stdout
    chat = daemon.cli("chat", sid, input="/usage\n/compact\n/quit\n")
    assert chat.returncode == 0
    assert "summaries" in chat.stdout and "compaction skipped" in chat.stdout
    for i in range(3):
        assert daemon.cli("ask", sid, f"later question {i}").returncode == 0
    standin.fail_next("http500")
    failed = daemon.cli("compact", sid, "--tail", "1")
    assert failed.returncode == 1 and "compaction failed: ollama_error" in failed.stderr
