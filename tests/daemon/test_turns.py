"""User turns through the real daemon and the Ollama stand-in: streaming, order, concurrency,
cancels, failures."""

import threading

import pytest

from conftest import wait_terminal
from ctxkeep.clients import CtxkeepError
from ctxkeep.protocol.events import (
    GenerationError,
    GenerationThinking,
    GenerationToken,
    QueryReceived,
    ResponseGeneration,
)

MODEL = "qwen2.5:7b"


def new_session(client, **fields):
    return client.create_session(model=fields.pop("model", MODEL), **fields).session


def active_messages_sent(standin):
    """The messages of the last chat request the stand-in received."""
    return standin.chats[-1].body["messages"]


def test_turn_streams_tokens_and_stores_both_messages(client, standin):
    s = new_session(client, system="Be brief.")
    standin.script("The sky is blue because of Rayleigh scattering.")
    acc = client.send(s.id, "Why is the sky blue?")
    end, events = wait_terminal(client, acc.generation_id)
    assert isinstance(end, ResponseGeneration)
    text = "".join(e.text for e in events if isinstance(e, GenerationToken))
    assert text == "The sky is blue because of Rayleigh scattering."
    assert end.message.content == text
    assert end.token_count == standin.chats[-1].prompt_tokens > 0
    assert end.eval_count > 0
    assert isinstance(events[0], QueryReceived) and events[0].message.content == "Why is the sky blue?"
    history = client.history(s.id)
    assert [(m.role, m.status) for m in history.messages] == [("user", "complete"), ("assistant", "complete")]
    assert client.session(s.id).session.token_count == end.token_count
    sent = active_messages_sent(standin)
    assert sent[0] == {"role": "system", "content": "Be brief."}


def test_options_are_passed_to_ollama(client, standin):
    s = new_session(client, options={"temperature": 0.2})
    client.set_model(s.id, options={"temperature": 0.7, "top_p": 0.9}, num_ctx=2048)
    acc = client.send(s.id, "hello")
    wait_terminal(client, acc.generation_id)
    options = dict(standin.chats[-1].body["options"])
    room = options.pop("num_predict")
    assert options == {"temperature": 0.7, "top_p": 0.9, "num_ctx": 2048}
    # the answer may use what the window leaves, never more: no silent context shift
    assert 256 <= room and standin.chats[-1].prompt_tokens + room <= 2048


def test_thinking_is_streamed_separately(client, standin):
    s = new_session(client, model="thinker:8b")
    acc = client.send(s.id, "think about this", think=True)
    end, events = wait_terminal(client, acc.generation_id)
    thinking = "".join(e.text for e in events if isinstance(e, GenerationThinking))
    assert thinking.startswith("Thinking about")
    assert end.message.thinking == thinking
    assert standin.chats[-1].body["think"] is True


def test_two_clients_see_the_same_tokens_in_the_same_order(daemon, standin):
    standin.chunk_delay = 0.002
    standin.script(" ".join(f"word{i}" for i in range(300)))
    with daemon.client() as a, daemon.client() as b:
        a.subscribe("")
        b.subscribe("generation.token/")
        s = new_session(a)
        acc = a.send(s.id, "count")
        end_a, ev_a = wait_terminal(a, acc.generation_id)
        tokens_b = []
        while True:
            item = b.next_event(timeout=10)
            assert item is not None
            if isinstance(item[1], GenerationToken) and item[1].generation_id == acc.generation_id:
                tokens_b.append(item[1])
                if "".join(t.text for t in tokens_b) == end_a.message.content:
                    break
        tokens_a = [e for e in ev_a if isinstance(e, GenerationToken)]
        assert [(t.index, t.text) for t in tokens_a] == [(t.index, t.text) for t in tokens_b]
        assert [t.index for t in tokens_a] == list(range(len(tokens_a)))
        assert a.gaps.missed == 0


def test_second_send_waits_its_turn(client, standin):
    standin.chunk_delay = 0.01
    s = new_session(client)
    first = client.send(s.id, "first question")
    second = client.send(s.id, "second question")
    assert (first.ahead, second.ahead) == (0, 1)
    end1, _ = wait_terminal(client, first.generation_id)
    end2, ev2 = wait_terminal(client, second.generation_id)
    assert isinstance(end1, ResponseGeneration) and isinstance(end2, ResponseGeneration)
    history = client.history(s.id).messages
    # both questions were stored when accepted; each answer names the question it answers
    assert [m.role for m in history] == ["user", "user", "assistant", "assistant"]
    assert [m.reply_to for m in history[2:]] == [history[0].seq, history[1].seq]
    assert [m.seq for m in client.history(s.id, active=True).messages] == [0, 2, 1, 3]
    # the second prompt carried the whole first turn
    assert [m["content"] for m in active_messages_sent(standin)][:2] == ["first question", end1.message.content]


def test_sessions_generate_at_the_same_time(client, standin):
    standin.chunk_delay = 0.02
    a, b = new_session(client), new_session(client)
    ga = client.send(a.id, "one two three four five six seven eight")
    gb = client.send(b.id, "nine ten eleven twelve thirteen fourteen")
    ends = {}
    order = []
    while len(ends) < 2:
        item = client.next_event(timeout=10)
        assert item is not None
        ev = item[1]
        if isinstance(ev, GenerationToken):
            order.append(ev.generation_id)
        if isinstance(ev, (ResponseGeneration, GenerationError)):
            ends[ev.generation_id] = ev
    assert all(isinstance(e, ResponseGeneration) for e in ends.values())
    # the two streams interleave: neither waited for the other to finish
    first_b = order.index(gb.generation_id)
    assert ga.generation_id in order[first_b:] or order.index(ga.generation_id) > first_b


def test_cancel_mid_stream_keeps_partial_in_history_only(client, standin):
    standin.chunk_delay = 0.05
    standin.script(" ".join(f"w{i}" for i in range(200)))
    s = new_session(client)
    acc = client.send(s.id, "a long answer please")
    while True:  # wait until some tokens streamed
        item = client.next_event(timeout=10)
        assert item is not None
        if isinstance(item[1], GenerationToken):
            break
    cancelled = client.cancel(s.id)
    assert cancelled.cancelled and cancelled.generation_id == acc.generation_id
    end, _ = wait_terminal(client, acc.generation_id)
    assert isinstance(end, GenerationError) and end.code == "cancelled"
    assert end.partial.startswith("w0")
    history = client.history(s.id).messages
    assert history[-1].status == "interrupted" and history[-1].content == end.partial
    assert history[-1].seq == end.stored_seq
    # the next turn's prompt holds neither the cancelled question nor its partial answer
    standin.chunk_delay = 0
    acc2 = client.send(s.id, "next")
    wait_terminal(client, acc2.generation_id)
    assert [m["content"] for m in active_messages_sent(standin)] == ["next"]


def test_cancel_with_nothing_running(client):
    s = new_session(client)
    assert client.cancel(s.id).cancelled is False


@pytest.mark.parametrize("fault, code", [
    ({"kind": "http500"}, "ollama_error"),
    ({"kind": "drop", "after_chunks": 3}, "stream_interrupted"),
])
def test_model_failures_end_with_error_and_leave_active_context(client, standin, fault, code):
    s = new_session(client)
    ok = client.send(s.id, "first")
    first, _ = wait_terminal(client, ok.generation_id)
    standin.fail_next(**fault)
    bad = client.send(s.id, "this one fails in the middle of the answer, sadly")
    end, _ = wait_terminal(client, bad.generation_id)
    assert isinstance(end, GenerationError) and end.code == code
    assert end.message
    after = client.send(s.id, "third")
    wait_terminal(client, after.generation_id)
    sent = [m["content"] for m in active_messages_sent(standin)]
    assert sent == ["first", first.message.content, "third"]
    statuses = [m.status for m in client.history(s.id).messages]
    assert statuses.count("interrupted") == 1


def test_unknown_model_says_to_pull_it(client, standin):
    s = new_session(client, model="nosuchmodel:7b", force=True)  # as if removed from Ollama since
    acc = client.send(s.id, "hello")
    end, _ = wait_terminal(client, acc.generation_id)
    assert isinstance(end, GenerationError) and end.code == "model_not_found"
    assert "ollama pull nosuchmodel:7b" in end.message


def test_ollama_down_gives_a_clear_error(daemon_factory, standin):
    import socket
    url = standin.url
    standin.stop()  # nothing listens on that port any more, and nothing else may take it:
    held = socket.socket()  # bound but not listening (connections refused), so no port
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (past the stand-in's TIME_WAITs)
    held.bind(("127.0.0.1", int(url.rsplit(":", 1)[1])))  # picked meanwhile is it (it was seen answering)
    daemon = daemon_factory(url).start()
    with held, daemon.client() as c:
        c.subscribe("")
        status = c.status().status
        assert status.ollama.reachable is False
        s = new_session(c)
        acc = c.send(s.id, "hello")
        end, _ = wait_terminal(c, acc.generation_id)
        assert isinstance(end, GenerationError) and end.code == "ollama_unreachable"
        assert "ollama serve" in end.message
        assert c.ping()  # still serving


def test_overflow_refused_by_ollama_is_reported(client, standin):
    s = new_session(client, num_ctx=256)
    acc = client.send(s.id, "word " * 400)
    end, _ = wait_terminal(client, acc.generation_id)
    assert isinstance(end, GenerationError) and end.code == "context_overflow"
    assert not standin.truncations  # never silently cut


def test_send_to_unknown_session(client):
    with pytest.raises(CtxkeepError) as err:
        client.send("no-such-session", "hi")
    assert err.value.code == "unknown_session"


def test_concurrent_clients_pipelining(daemon):
    """Several threads, each with its own client, hammer the daemon at once."""
    errors = []

    def work():
        try:
            with daemon.client() as c:
                for _ in range(50):
                    c.ping()
                c.sessions()
        except Exception as exc:
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_silent_model_server_is_reported_and_given_up(daemon_factory, standin):
    """Ollama takes the request and sends nothing: while a model loads the turn says so
    and waits; a loaded model that stays silent past first_token_timeout ends the turn
    with ollama_not_answering (it waited read_timeout, 600 s, in silence before)."""
    from ctxkeep.protocol.events import GenerationWaiting
    daemon = daemon_factory()
    daemon.write_config("first_token_timeout = 2\n")
    daemon.start()
    with daemon.client(timeout=30) as c:
        c.subscribe("")
        loading = c.create_session(model="thinker:8b").session.id
        standin.fail_next("delay", seconds=2.4)  # before the model is in /api/ps: loading
        acc = c.send(loading, "hello")
        end, events = wait_terminal(c, acc.generation_id)
        waits = [e for e in events if isinstance(e, GenerationWaiting)]
        assert isinstance(end, ResponseGeneration), end  # loading is waited for
        assert waits and all(w.state == "loading" and "loading thinker:8b" in w.message for w in waits)
        standin.fail_next("delay", seconds=30)  # now it is loaded, and says nothing
        acc = c.send(loading, "and now?")
        end, events = wait_terminal(c, acc.generation_id)
        waits = [e for e in events if isinstance(e, GenerationWaiting)]
        assert isinstance(end, GenerationError) and end.code == "ollama_not_answering", end
        assert "stopped answering" in end.message and "first_token_timeout" in end.message
        assert waits and waits[-1].state == "processing" and waits[-1].waited >= 2


def test_an_answer_that_loops_is_stopped_kept_and_marked(client, standin):
    """A model caught in a loop: the answer stops within a few repeats (not at its cap),
    is stored, and says "stopped: repeating" (its done_reason; `show` marks it)."""
    from ctxkeep.protocol.events import ResponseGeneration
    loop = "I am here to help you with anything you need today, just ask me and I will answer. "
    standin.reply_fn = lambda messages: "Sure. " + loop * 120
    standin.chunk_delay = 0.001
    sid = client.create_session(model="qwen2.5:7b").session.id
    end = client.turn(sid, "Can you help me?")
    assert isinstance(end, ResponseGeneration) and end.message.done_reason == "repeating"
    said = end.message.content
    assert said.startswith("Sure. " + loop) and len(said.split()) <= 6 * len(loop.split())  # ~200 tokens, not 2,000
    stored = client.history(sid).messages[-1]
    assert stored.status == "complete" and stored.content == said
