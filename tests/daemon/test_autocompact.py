"""Automatic graduated compaction, goals, pins, snapshots and reliability through the real daemon."""

import time

import pytest

from conftest import talkative, until_idle, wait_for
from ctxkeep.daemon.context import reliability
from ctxkeep.protocol.events import (
    CompactionResult,
    ContextWarning,
    GenerationError,
    GoalUpdated,
    ResponseGeneration,
    SnapshotCreated,
    SnapshotRestored,
)
from ctxkeep.protocol.goals import Goals
from harness import DaemonThread

MODEL = "qwen2.5:7b"


@pytest.fixture
def daemon(short_tmp, standin):
    """The daemon in a thread of this process, passes allowed on every turn and in steps of
    any size (each level's own behaviour is what these tests follow)."""
    d = DaemonThread(short_tmp, standin.url, compaction_cooldown=0, keep_recent_messages=2,
                     compaction_min_step=0).start()
    yield d
    d.stop()


SEEN: dict[int, list] = {}


def turn(client, sid, text, cwd=""):
    """One turn, and the automatic compaction after it: every event up to the session's
    `busy: false` is kept for collect()."""
    acc = client.send(sid, text, cwd=cwd)
    seen = SEEN.setdefault(id(client), [])
    events = until_idle(client, sid, acc.generation_id)
    seen.extend(events)
    ends = [e for e in events if getattr(e, "generation_id", None) == acc.generation_id
            and isinstance(e, (ResponseGeneration, GenerationError))]
    assert len(ends) == 1, ends
    assert isinstance(ends[0], ResponseGeneration), ends[0]
    return ends[0]


def collect(client, kinds):
    """Events of the given kinds seen by turn() so far (the session was idle after each)."""
    return [e for e in SEEN.pop(id(client), []) if isinstance(e, kinds)]


def active(client, sid):
    return client.history(sid, active=True, limit=1000).messages


def sent(standin):
    return [c.body for c in standin.chats if c.body.get("stream", True)][-1]["messages"]


def test_level1_shows_unused_file_references_as_summaries(client, standin, tmp_path):
    (tmp_path / "big.py").write_text("\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(60)))
    s = client.create_session(model=MODEL).session
    client.set_model(s.id, thresholds=[0.01, 0.98, 0.99])
    turn(client, s.id, "Look at @big.py:full", cwd=str(tmp_path))
    assert 'mode="full"' in sent(standin)[-1]["content"]
    for i in range(2):
        turn(client, s.id, f"unrelated question {i}")
    results = [r for r in collect(client, CompactionResult) if r.status == "ok"]
    assert results and results[0].level == 1 and results[0].strategy == "file_compress"
    turn(client, s.id, "and now?")
    first_user = sent(standin)[0]["content"]
    assert 'mode="summary"' in first_user and "return x + 7" not in first_user
    assert full_history_first(client, s.id) == "full"  # the history keeps the full text


def full_history_first(client, sid):
    m = client.history(sid, limit=1).messages[0]
    return m.files[0].mode


def test_level2_prunes_low_relevance_messages_with_embeddings(client, standin):
    s = client.create_session(model=MODEL).session
    client.set_model(s.id, thresholds=[0.01, 0.02, 0.99])
    topics = ["kubernetes deployment rollout", "banana bread recipe", "kubernetes pod scheduling",
              "medieval poetry", "kubernetes service mesh"]
    standin.reply_fn = lambda msgs: "Answer about " + msgs[-1]["content"]
    for topic in topics:
        turn(client, s.id, f"Tell me about {topic}")
    results = [r for r in collect(client, CompactionResult) if r.status == "ok" and r.level == 2]
    assert results and results[0].strategy == "message_prune"
    assert standin.embeds and standin.embeds[0]["model"] == "nomic-embed-text"
    # level 2 judges each message by the vector recall embeds it by, not a second embedding
    asked = [t for e in standin.embeds for t in ([e["input"]] if isinstance(e["input"], str) else e["input"])]
    assert all(t.startswith(("search_document: ", "search_query: ")) for t in asked), asked
    assert len(asked) == len(set(asked))  # each text embedded once
    now = active(client, s.id)
    assert [m.content for m in now if m.role == "user"] == [f"Tell me about {t}" for t in topics]
    page = client.history(s.id, limit=1000)
    history = page.messages
    assert len([m for m in history if m.role == "assistant"]) == len(topics)  # nothing left history
    marks = [m for m in page.compactions if m.level == 2]  # the line, where it happened
    assert marks[0].marker == results[0].marker and "older messages set aside" in marks[0].marker
    assert 0 < marks[0].at <= len(history)
    assert len([m for m in now if m.role == "assistant"]) < len(topics)


def test_level2_falls_back_to_keywords_when_embeddings_fail(client, standin):
    s = client.create_session(model=MODEL).session
    client.set_model(s.id, thresholds=[0.01, 0.02, 0.99])
    for i in range(3):
        standin.fail_next("http500", path="/api/embed")
    for i in range(5):
        turn(client, s.id, f"question number {i} about gardening")
    results = [r for r in collect(client, CompactionResult) if r.level == 2]
    assert any(r.status == "ok" for r in results)


def test_level3_checkpoint_goals_pins_and_aging(client, standin):
    s = client.create_session(model=MODEL, system="Be helpful.").session
    client.set_model(s.id, thresholds=[0.001, 0.002, 0.003])
    talkative(standin)
    standin.script("[GOAL] Ship the parser\n[DECISION] Use a recursive descent parser - LOCKED\n[NEXT] Write tests")
    turn(client, s.id, "Let us plan the parser")
    goal_events = collect(client, GoalUpdated)
    assert goal_events and goal_events[-1].goals.goal == "Ship the parser"
    pinned_seq = client.history(s.id, limit=1000).messages[-1].seq
    client.pin(s.id, pinned_seq)
    for i in range(8):
        turn(client, s.id, f"step {i}: more detail about the tokenizer and the grammar")
    results = [r for r in collect(client, CompactionResult) if r.status == "ok"]
    assert any(r.level == 3 and r.strategy == "checkpoint" for r in results)
    usage = client.usage(s.id)
    assert usage.checkpoints and usage.pinned == [pinned_seq]
    ages = {c.age for c in usage.checkpoints}
    assert ages & {"old", "ancient", "merged"}, ages  # earlier checkpoints aged
    now = active(client, s.id)
    assert pinned_seq in [m.seq for m in now]
    system = sent(standin)[0]["content"]
    assert system.startswith("Be helpful.")
    assert "ACTIVE GOAL: Ship the parser" in system
    assert "(locked) Use a recursive descent parser" in system
    assert "Summary of the earlier conversation" in system
    summary_calls = [c.body for c in standin.chats if c.body.get("stream") is False]
    assert any("ACTIVE GOAL: Ship the parser" in c["messages"][0]["content"] for c in summary_calls)
    assert client.goals(s.id).goals.decisions[0].locked


def test_cooldown_between_automatic_compactions(short_tmp, standin):
    d = DaemonThread(short_tmp, standin.url, compaction_cooldown=6, keep_recent_messages=2,
                     compaction_min_step=0).start()
    try:
        with d.client() as c:
            c.subscribe("")
            s = c.create_session(model=MODEL).session
            c.set_model(s.id, thresholds=[0.01, 0.02, 0.99])
            for i in range(6):
                turn(c, s.id, f"topic {i} with some words")
            ok = [r for r in collect(c, CompactionResult) if r.status == "ok"]
    finally:
        d.stop()
    # 6 turns = 12 messages: with a cooldown of 6 messages, at most 2 runs changed anything
    assert 1 <= len(ok) <= 2


def test_snapshots_and_undo(client, standin):
    s = client.create_session(model=MODEL).session
    client.set_model(s.id, thresholds=[0.001, 0.002, 0.003])
    talkative(standin)
    turn(client, s.id, "first question")
    before = active(client, s.id)
    for i in range(4):
        turn(client, s.id, f"question {i}")
    created = collect(client, (SnapshotCreated,))
    assert created and created[0].snapshot.reason.startswith("before compaction (automatic")
    listing = client.snapshots(s.id).snapshots
    assert len(listing) >= len(created)
    history = client.history(s.id, limit=1000).messages
    restored = client.restore(s.id).snapshot  # undo the last compaction
    assert restored.id == [x for x in listing if x.reason.startswith("before compaction")][0].id
    assert wait_for(client, SnapshotRestored).snapshot.id == restored.id
    assert client.history(s.id, limit=1000).messages == history  # history untouched
    manual = client.snapshot(s.id).snapshot
    assert manual.reason == "manual"
    client.set_goals(s.id, Goals(goal="set after the compactions"))
    client.pin(s.id, before[0].seq)
    client.restore(s.id, listing[-1].id)  # the oldest: taken before the first compaction
    assert [m.seq for m in active(client, s.id)][:len(before)] == [m.seq for m in before]
    assert client.goals(s.id).goals.goal == "set after the compactions"  # later edits stay
    assert client.usage(s.id).pinned == [before[0].seq]
    client.delete_snapshot(s.id, manual.id)
    assert manual.id not in [x.id for x in client.snapshots(s.id).snapshots]


def test_reliability_warning_and_score_in_usage(client, standin):
    s = client.create_session(model=MODEL).session  # a 7.6B model: factor 0.5
    client.set_model(s.id, thresholds=[0.001, 0.002, 0.003])
    talkative(standin)
    for i in range(6):
        turn(client, s.id, f"question {i} about something")
    seen = collect(client, (ContextWarning, SnapshotCreated, CompactionResult))
    warnings = [w for w in seen if isinstance(w, ContextWarning) and w.kind == "reliability"]
    assert len(warnings) == 1 and "Use larger model" not in warnings[0].message
    assert "start a new conversation" in warnings[0].message.lower()
    info = client.session(s.id).session
    assert info.compactions >= 2 and info.reliability == pytest.approx(
        reliability.score("7.6B", info.compactions), abs=1e-3)
    passes = [e for e in seen if isinstance(e, SnapshotCreated) and "automatic" in e.snapshot.reason]
    levels = [r for r in seen if isinstance(r, CompactionResult) and r.status == "ok"]
    assert info.compactions == len(passes) <= len(levels)  # a pass is one compaction, whatever it ran
    assert client.usage(s.id).usage.reliability == info.reliability


def test_user_messages_stay_verbatim_until_a_shown_summary(client, standin):
    s = client.create_session(model="small:1b", num_ctx=2048).session
    client.set_model(s.id, thresholds=[0.5, 0.65, 0.8])
    talkative(standin, words=20)
    texts = [f"Requirement {i}: " + "the system must handle this case carefully " * 6 for i in range(24)]
    summarized_from: dict[str, int] = {}
    for i, text in enumerate(texts):
        turn(client, s.id, text)
        prompt = sent(standin)
        system = prompt[0]["content"] if prompt[0]["role"] == "system" else ""
        for earlier in texts[:i + 1]:
            if earlier in summarized_from:
                continue
            verbatim = any(m["role"] == "user" and earlier in m["content"] for m in prompt)
            if not verbatim:  # it left the prompt: only ever inside a summary shown as the user's
                assert "the user's own messages among them" in system, (earlier[:20], i)
                summarized_from[earlier] = i
    warnings = [w for w in collect(client, ContextWarning) if w.kind == "user_summary"]
    assert warnings and "your earliest messages" in warnings[0].message
    assert any(c.of_user for c in client.usage(s.id).checkpoints)
    assert summarized_from  # the rule fired in a 2,048-token window
    assert not standin.truncations and not standin.refusals


def test_auto_compaction_can_be_switched_off(client, standin):
    s = client.create_session(model=MODEL).session
    client.set_model(s.id, thresholds=[0.001, 0.002, 0.003], auto_compaction=False)
    for i in range(4):
        turn(client, s.id, f"question {i}")
    assert not [r for r in collect(client, CompactionResult)]
    assert client.session(s.id).session.auto_compaction is False


def idle(daemon, sid: str, timeout: float = 10.0) -> None:
    """Wait (with a deadline) until the session has no job queued or running."""
    with daemon.client() as c:
        c.subscribe(f"session.updated/{sid}")
        deadline = time.monotonic() + timeout
        while c.session(sid).session.busy:
            assert time.monotonic() < deadline, "the session stayed busy"
            c.next_event(timeout=0.2)  # wakes on the session's next update


def test_cli_goals_pin_snapshot_undo(daemon, standin):
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    assert daemon.cli("set", sid, "--thresholds", "0.001,0.002,0.003").returncode == 0
    assert daemon.cli("goals", sid, "--goal", "Write the report", "--decide", "Use LaTeX",
                      "--lock").returncode == 0
    shown = daemon.cli("goals", sid).stdout
    assert "goal: Write the report" in shown and "decision: Use LaTeX (locked)" in shown
    for i in range(4):
        assert daemon.cli("ask", sid, f"section {i}").returncode == 0
    idle(daemon, sid)  # `ask` ends with the answer; the compaction after it may still run
    assert daemon.cli("pin", sid, "1").stdout.strip() == "pinned #1"
    listing = daemon.cli("snapshot", sid, "list").stdout
    assert "before compaction" in listing
    undo = daemon.cli("undo", sid)
    assert undo.returncode == 0 and "restored the state before compaction" in undo.stdout
    assert daemon.cli("set", sid, "--thresholds", "0.9,0.1,0.2").returncode == 1
    chat = daemon.cli("chat", sid, input="/goals\n/usage\n/pin\n/quit\n")
    assert "goal: Write the report" in chat.stdout and "reliability" in chat.stdout
    assert "pinned #" in chat.stdout


def test_ask_shows_a_compaction_that_runs_before_its_answer(client, daemon, standin):
    """Issue 42: a turn that must compact first says so while it does, not silence."""
    words = " ".join(f"w{i}" for i in range(60))
    client.import_session(name="full", model=MODEL, num_ctx=1024, messages=[
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i}: {words}"} for i in range(40)])
    standin.script("A summary of forty long messages.", "The answer.")
    asked = daemon.cli("ask", "full", "And now, what next?")
    assert asked.returncode == 0, asked.stderr
    assert "ctxkeep: compacting: level" in asked.stderr and "messages" in asked.stderr


def test_a_compaction_after_an_answer_is_shown_and_stopped_with_the_context_as_it_was(client, standin):
    """A pass after an answer is a job like any other: `cancel` stops it within a second,
    says so, and the context is as it was before it."""
    import time as clock

    from ctxkeep.protocol.events import CompactionRequest
    s = client.create_session(model=MODEL, num_ctx=2048).session
    slow = {"on": False}

    def reply(messages):
        if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")) \
                or "summar" in messages[0]["content"].lower() and len(messages) == 2:
            if slow["on"]:
                clock.sleep(5)  # a CPU writing a summary
            return "Summary: the user and the assistant discussed " + " ".join(messages[-1]["content"].split()[:3])
        return " ".join(f"detail{i}" for i in range(120))
    standin.reply_fn = reply
    client.subscribe("")
    for i in range(40):
        before = [m.seq for m in client.history(s.id, active=True, limit=1000).messages]
        slow["on"] = True
        end = client.turn(s.id, f"step {i}: more about the parser and the tokenizer " * 4)
        assert isinstance(end, ResponseGeneration)
        started = None
        deadline = clock.monotonic() + 1.0
        while clock.monotonic() < deadline and started is None:
            item = client.next_event(0.1)
            if item and isinstance(item[1], CompactionRequest) and item[1].session_id == s.id:
                started = item[1]
        if started is None:
            slow["on"] = False
            continue
        if started.level < 3:
            deadline = clock.monotonic() + 5
            while clock.monotonic() < deadline:  # on to the level that asks for a summary
                item = client.next_event(0.1)
                if item and isinstance(item[1], CompactionRequest) and item[1].level == 3:
                    break
        asked = clock.monotonic()
        reply_ = client.cancel(s.id)
        assert reply_.cancelled and reply_.compaction
        while client.session(s.id).session.busy:
            assert clock.monotonic() - asked < 1.0, "the pass was not stopped within a second"
            clock.sleep(0.02)
        after = [m.seq for m in client.history(s.id, active=True, limit=1000).messages]
        assert after == before + [end.message.seq - 1, end.message.seq]  # as the turn left it
        break
    else:
        raise AssertionError("no compaction ran after an answer")
