"""Job lifecycle and event invariants through the real daemon (issue 10's cases)."""

import json
import time

import zmq

from conftest import until_idle, wait_for
from ctxkeep.protocol.events import (
    CompactionRequest,
    CompactionResult,
    ContextUsage,
    DaemonStatusEvent,
    GenerationError,
    ResponseGeneration,
    SessionUpdated,
)
from ctxkeep.protocol.goals import Goals
from ollama_standin import Fault

MODEL = "qwen2.5:7b"


def events_of(events, kinds, session_id=None):
    return [e for e in events if isinstance(e, kinds) and (session_id is None or e.session_id == session_id)]


def test_cancel_right_after_send_ends_the_turn_and_frees_the_session(client, standin):
    standin.chunk_delay = 0.01
    s = client.create_session(model=MODEL).session
    for _ in range(4):
        acc = client.send(s.id, "tell me a long story")
        cancelled = client.cancel(s.id)
        assert cancelled.cancelled and cancelled.generation_id == acc.generation_id
        events = until_idle(client, s.id, acc.generation_id)
        (end,) = [e for e in events if isinstance(e, (ResponseGeneration, GenerationError))
                  and e.generation_id == acc.generation_id]
        assert isinstance(end, GenerationError) and end.code == "cancelled"
    assert not client.session(s.id).session.busy
    assert client.cancel(s.id).cancelled is False  # nothing left to cancel
    # the question is kept, with its (empty) answer marked interrupted
    history = client.history(s.id, limit=100).messages
    assert [m.role for m in history].count("user") == 4
    answers = [m for m in history if m.role == "assistant"]
    assert all(m.status == "interrupted" and m.reply_to >= 0 for m in answers)
    client.delete(s.id)  # not busy


def test_cancel_the_third_of_three_queued_sends(client, standin):
    # the first answer starts only after a second: the three sends are queued behind it
    standin.faults.append(Fault("delay", seconds=1.0))
    s = client.create_session(model=MODEL).session
    accs = [client.send(s.id, f"question {i}") for i in range(3)]
    assert [a.ahead for a in accs] == [0, 1, 2]
    assert client.cancel(s.id, accs[2].generation_id).cancelled
    events = []
    for acc in accs:
        events += until_idle(client, s.id, acc.generation_id) if acc is accs[-1] else []
    ends = {e.generation_id: e for e in events if isinstance(e, (ResponseGeneration, GenerationError))}
    assert isinstance(ends[accs[2].generation_id], GenerationError)
    assert all(isinstance(ends[a.generation_id], ResponseGeneration) for a in accs[:2])
    assert not client.session(s.id).session.busy


def test_busy_is_published_true_then_false(client, standin):
    s = client.create_session(model=MODEL).session
    acc = client.send(s.id, "hello")
    events = until_idle(client, s.id, acc.generation_id)
    busy = [e.session.busy for e in events_of(events, SessionUpdated, s.id)]
    assert busy[0] is True and busy[-1] is False
    done = next(i for i, e in enumerate(events) if isinstance(e, ResponseGeneration))
    assert any(isinstance(e, SessionUpdated) and not e.session.busy for e in events[done:])


def test_a_failing_automatic_compaction_ends_every_turn_in_a_tiny_window(client, standin):
    """A 512-token window: summarization calls have no room; every turn still ends,
    each compaction.request gets its result, and no question is left unanswered."""
    s = client.create_session(model=MODEL, num_ctx=512).session
    requests, results = [], []
    for i in range(7):
        acc = client.send(s.id, f"turn {i}: " + "a fairly long question about many things " * 5)
        events = until_idle(client, s.id, acc.generation_id)
        requests += events_of(events, CompactionRequest)
        results += events_of(events, CompactionResult)
    assert sorted(r.compaction_id for r in requests) == sorted(r.compaction_id for r in results)
    history = client.history(s.id, limit=200).messages
    questions = [m.seq for m in history if m.role == "user"]
    answered = {m.reply_to for m in history if m.role == "assistant"}
    assert set(questions) <= answered
    assert not standin.truncations and not standin.refusals


def test_every_prompt_change_publishes_usage_as_an_estimate(client, standin):
    s = client.create_session(model=MODEL).session
    acc = client.send(s.id, "hello there")
    until_idle(client, s.id, acc.generation_id)
    assert client.usage(s.id).usage.exact
    changes = [
        lambda: client.set_system(s.id, "You are a careful assistant. " * 20),
        lambda: client.set_model(s.id, num_ctx=4096),
        lambda: client.set_goals(s.id, Goals(goal="Finish the report", next_steps=["outline"])),
        lambda: client.pin(s.id, 0),
    ]
    for change in changes:
        change()
        usage = wait_for(client, ContextUsage, where=lambda e: e.session_id == s.id).usage
        fresh = client.usage(s.id).usage
        assert not usage.exact and usage.tokens == fresh.tokens and usage.window == fresh.window
    # the longer system prompt is in the estimate: far above the last exact count
    assert client.usage(s.id).usage.tokens > 100
    assert client.usage(s.id).usage.window == 4096


def test_manual_compaction_with_nothing_to_do_publishes_request_then_result(client):
    s = client.create_session(model=MODEL).session
    acc = client.compact(s.id)
    events = until_idle(client, s.id, acc.compaction_id)
    mine = [e for e in events if getattr(e, "compaction_id", None) == acc.compaction_id]
    assert [type(e) for e in mine] == [CompactionRequest, CompactionResult]
    assert mine[1].status == "skipped" and "nothing to compact" in mine[1].reason


def test_compaction_results_never_report_growth(client, standin):
    """Short answers make summaries as long as what they replace: such steps must fail and
    change nothing, never report `ok` with a larger context."""
    s = client.create_session(model=MODEL).session
    client.set_model(s.id, thresholds=[0.001, 0.002, 0.003])
    results = []
    for i in range(6):
        acc = client.send(s.id, f"q{i}")
        results += events_of(until_idle(client, s.id, acc.generation_id), CompactionResult)
    assert results
    for r in results:
        if r.status == "ok":
            assert r.tokens_after < r.tokens_before and r.tokens_freed == r.tokens_before - r.tokens_after
        elif r.status == "failed" and "shrink" in r.reason:
            assert r.tokens_after == r.tokens_before


def test_paging_the_active_context_follows_its_order(client, standin):
    s = client.create_session(model=MODEL).session
    for i in range(6):
        acc = client.send(s.id, f"question {i}")
        until_idle(client, s.id, acc.generation_id)
    acc = client.compact(s.id, tail_turns=2)
    until_idle(client, s.id, acc.compaction_id)
    whole = [m.seq for m in client.history(s.id, active=True, limit=100).messages]
    assert whole[0] > whole[1]  # the summary (newest seq) comes first
    paged, start = [], 0
    while True:
        page = client.history(s.id, active=True, start=start, limit=2)
        paged += [m.seq for m in page.messages]
        if page.next is None:
            break
        start = page.next
    assert paged == whole


def test_unknown_nested_fields_and_mistyped_envelopes(daemon):
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(daemon.control)
    try:
        def ask(obj) -> dict:
            sock.send(json.dumps(obj).encode())
            assert sock.poll(5000)
            return json.loads(sock.recv())
        created = ask({"type": "session.create", "id": "c1", "v": 1})
        sid = created["session"]["id"]
        reply = ask({"type": "goals.set", "id": "g1", "v": 1, "session": sid,
                     "goals": {"goal": "x", "next_step": ["typo"]}})
        assert reply["type"] == "error" and reply["code"] == "invalid_request"
        assert "next_step" in reply["message"] and reply["id"] == "g1"
        for bad in ({"type": "ping", "id": "v1", "v": "1"}, {"type": 7, "id": "t7"}):
            reply = ask(bad)
            assert reply["type"] == "error" and reply["id"] == bad["id"]
        deep = b'{"type":"ping","id":"d","x":' + b"[" * 1000 + b"]" * 1000 + b"}"
        sock.send(deep)
        assert sock.poll(5000)
        assert json.loads(sock.recv())["code"] == "bad_json"
        assert ask({"type": "ping", "id": "alive", "v": 1})["type"] == "pong"
    finally:
        sock.close(0)


def test_reachability_follows_every_model_call(daemon_factory, standin):
    port = standin.port
    standin.stop()
    d = daemon_factory(f"http://127.0.0.1:{port}").start()
    with d.client() as c:
        deadline = time.monotonic() + 10
        while not c.status().status.ollama.checked and time.monotonic() < deadline:
            time.sleep(0.05)
        ollama = c.status().status.ollama
        assert ollama.checked and not ollama.reachable
        # status says why recall ranks by words (the harness turns the built-in embedder off)
        recall = c.status().status.recall
        assert recall.startswith("by words only (the model server is not reachable) (start it"), recall
        standin.start(port=port)
        c.subscribe("")
        s = c.create_session(model=MODEL).session
        acc = c.send(s.id, "hello")
        until_idle(c, s.id, acc.generation_id)
        assert c.status().status.ollama.reachable  # at once, not at the next minute's check
        assert c.status().status.recall.startswith("by words and meaning (nomic-embed-text)")
        # and its version, asked at once too (it said "reachable" with no version before)
        deadline = time.monotonic() + 5
        while not c.status().status.ollama.version and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.status().status.ollama.version == standin.version


def test_ollama_coming_up_is_seen_within_seconds(daemon_factory, standin):
    """With no call made, a check every few seconds while Ollama is unreachable finds it
    (`status` said NOT REACHABLE for a minute after Ollama came up)."""
    port = standin.port
    standin.stop()
    d = daemon_factory(f"http://127.0.0.1:{port}").start()
    with d.client() as c:
        c.subscribe("daemon.status")
        wait_for(c, DaemonStatusEvent, where=lambda e: e.status.ollama.checked and not e.status.ollama.reachable)
        standin.start(port=port)
        event = wait_for(c, DaemonStatusEvent, timeout=15, where=lambda e: e.status.ollama.reachable)
        assert event.status.ollama.version == standin.version


def test_chat_slash_command_errors_do_not_end_the_chat(daemon):
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    chat = daemon.cli("chat", sid, input="/undo\n/pin 999\n/nosuch\n/help\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    assert "/undo: no compaction to undo" in chat.stdout
    assert "/pin: the session has no message #999" in chat.stdout
    assert "unknown command /nosuch" in chat.stdout and "/compact" in chat.stdout


def chatted(daemon, standin, replies: tuple[str, ...], typed: str) -> tuple[str, str, list]:
    """A new session, a chat in which the model says `replies` in turn and the user types
    `typed`: (the session's id, what the chat printed, what the model now sees)."""
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    standin.script(*replies)
    chat = daemon.cli("chat", sid, input=typed + "/quit\n")
    assert chat.returncode == 0, chat.stderr
    with daemon.client() as c:
        return sid, chat.stdout, c.history(sid, active=True).messages


def test_chat_retry_asks_again_and_keeps_the_old_answer(daemon, standin):
    sid, printed, active = chatted(daemon, standin, ("The first take.", "The second take."),
                                   "/retry\nName a colour\n/retry\n")
    assert "/retry: session" in printed and "nothing to regenerate" in printed
    assert "The first take." in printed and "The second take." in printed
    with daemon.client() as c:
        messages = c.history(sid).messages
    first, second = messages[1], messages[2]
    assert (second.reply_to, second.alternative_of) == (first.reply_to, first.seq)
    assert [m.content for m in active] == ["Name a colour", "The second take."]
    shown = daemon.cli("show", sid).stdout
    assert f"#{second.seq}" in shown and f"[alternative to #{first.seq}]" in shown


def test_chat_edit_asks_the_last_question_again_in_other_words(daemon, standin):
    _, printed, active = chatted(daemon, standin, ("Blue.", "Carrot."),
                                 "Name a colour\n/edit\n/edit Name a vegetable\n")
    assert "give the new text" in printed and "Carrot." in printed
    assert [m.content for m in active] == ["Name a vegetable", "Carrot."]
    assert active[0].alternative_of == 0


def test_chat_alt_lists_the_answers_and_puts_one_back(daemon, standin):
    _, printed, active = chatted(daemon, standin, ("Blue.", "Teal."),
                                 "Name a colour\n/retry\n/alt\n/alt 1\n/alt\n/alt 0\n")
    assert "* #2  Teal." in printed and "  #1  Blue." in printed
    assert "answer #1 is the one the model sees now" in printed and "* #1  Blue." in printed
    assert "/alt: #0 is not an answer to the last question" in printed
    assert [m.content for m in active] == ["Name a colour", "Blue."]
