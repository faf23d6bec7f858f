"""User turns through the real daemon and the Ollama stand-in."""

import threading

import pytest

from conftest import wait_terminal
from ctxkeep.clients import CtxkeepError
from ctxkeep.protocol.events import (
    ContextUsage, GenerationError, GenerationThinking, GenerationToken, QueryReceived,
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


def test_usage_event_after_turn(client, standin):
    s = new_session(client)
    acc = client.send(s.id, "hello")
    end, _ = wait_terminal(client, acc.generation_id)
    usage = None
    while usage is None:
        item = client.next_event(timeout=5)
        assert item is not None
        if isinstance(item[1], ContextUsage):
            usage = item[1].usage
    assert usage.exact and usage.tokens == end.token_count and usage.window == 8192


def test_num_ctx_always_sent_and_capped_by_context_length(client, standin):
    s = new_session(client, model="small:1b", num_ctx=16384)  # the model knows only 4096
    acc = client.send(s.id, "hello")
    end, _ = wait_terminal(client, acc.generation_id)
    body = standin.chats[-1].body
    assert body["options"]["num_ctx"] == 4096
    assert body["truncate"] is False
    assert end.window == 4096
    assert client.session(s.id).session.window == 4096


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
    url = standin.url
    standin.stop()  # nothing listens on that port any more
    daemon = daemon_factory(url).start()
    with daemon.client() as c:
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
        except Exception as exc:  # noqa: BLE001
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


def test_the_count_shown_is_what_the_next_prompt_holds_the_answer_included(client, standin):
    """After a long answer the gauge, `sessions` and /usage show the prompt with the answer
    in it (its tokens are the server's eval_count), not the prompt before the answer."""
    sid = client.create_session(model="qwen2.5:7b", num_ctx=8192).session.id
    standin.script(" ".join(f"word{i}" for i in range(600)))
    accepted = client.send(sid, "Tell me everything.")
    end, _ = wait_terminal(client, accepted.generation_id)
    assert isinstance(end, ResponseGeneration) and end.eval_count > 500
    assert end.next_tokens == end.token_count + end.eval_count
    info = client.session(sid).session
    assert info.token_count == end.token_count and info.next_tokens == end.next_tokens
    usage = client.usage(sid).usage
    assert usage.next_tokens == end.next_tokens


def test_one_long_answer_leaves_a_small_window_session_a_way_forward(client, standin):
    """An answer that would run to the end of a 2,048 window is capped at a share of it
    (`answer_max_share`), marked as cut by its limit, and the next question is answered."""
    sid = client.create_session(model="qwen2.5:7b", num_ctx=2048).session.id
    standin.script(" ".join(f"word{i}" for i in range(3000)))
    first, _ = wait_terminal(client, client.send(sid, "Say hello in French.").generation_id)
    assert isinstance(first, ResponseGeneration) and first.message.done_reason == "length"
    assert first.eval_count <= 2048 // 4 and standin.chats[-1].body["options"]["num_predict"] <= 512
    for question in ("And in Spanish?", "And in German?"):
        then, _ = wait_terminal(client, client.send(sid, question).generation_id)
        assert isinstance(then, ResponseGeneration), then


@pytest.mark.parametrize("mode", ["uncached", "omit"])
def test_the_count_never_silently_shrinks_whatever_the_server_counts_of_its_cache(client, standin, mode):
    """Older Ollama versions counted only the prompt tokens they did not have cached, or left
    the count out when all of them were: the session's count stays the whole prompt (the
    estimate, marked as one), never the small number."""
    standin.count_mode = mode
    sid = client.create_session(model="qwen2.5:7b", num_ctx=8192,
                                system="You are a careful assistant who answers briefly. " * 12).session.id
    for i in range(5):
        end, _ = wait_terminal(client, client.send(sid, f"Tell me about the river number {i}, please.").generation_id)
        assert isinstance(end, ResponseGeneration)
    whole = standin.chats[-1].prompt_tokens
    if mode == "omit":  # the same prompt again: all of it read from the cache, no count
        end, _ = wait_terminal(client, client.regenerate(sid).generation_id)
        assert not end.token_count_exact
    info = client.session(sid).session
    assert info.token_count >= 0.8 * whole and not info.token_count_exact
    assert info.next_tokens >= 0.8 * whole


def test_what_the_servers_prompt_cache_served_is_recorded_and_shown(client, daemon, standin):
    """Issue 42: Ollama's `prompt_eval_cached_count` (which the `ollama` package drops: read
    from the answer's bytes) per turn, its share over the session in `usage`, `sessions`
    and `show`; the count stays the whole prompt."""
    sid = client.create_session(model="qwen2.5:7b", name="cached", num_ctx=8192,
                                system="You are a careful assistant who answers briefly. " * 12).session.id
    ends = []
    for i in range(4):
        end, _ = wait_terminal(client, client.send(sid, f"Tell me about the river number {i}, please.").generation_id)
        ends.append(end)
    assert ends[0].cached_tokens == 0 and all(e.cached_tokens > 0.5 * e.token_count for e in ends[1:])
    assert ends[-1].token_count == standin.chats[-1].prompt_tokens  # the whole prompt, cached or not
    usage = client.usage(sid).usage
    assert usage.cached_tokens == ends[-1].cached_tokens and 0.3 < usage.cache_hit_rate < 1
    assert client.session(sid).session.cache_hit_rate == usage.cache_hit_rate
    shown = daemon.cli("show", "cached", "--last", "1").stdout
    assert f"{usage.cache_hit_rate:.0%} from the model's cache" in shown
    chat = daemon.cli("chat", "cached", input="/usage\n/quit\n").stdout
    assert f"{ends[-1].cached_tokens:,} of the last prompt's" in chat


def test_show_prompt_is_exactly_what_the_model_sees_part_by_part(client, daemon, standin):
    """`prompt` (and `ctxkeep show --prompt`): the system prompt, then each message as the
    model is shown it, in the order it is sent, each with its estimate."""
    sid = client.create_session(model="qwen2.5:7b", system="Answer briefly.").session.id
    for text in ("Why is the sky blue?", "And at sunset?"):
        wait_terminal(client, client.send(sid, text).generation_id)
    reply = client.prompt(sid)
    assert [p.kind for p in reply.parts] == ["system", "message", "message", "message", "message"]
    sent = standin.chats[-1].body["messages"]
    assert [p.text for p in reply.parts][:4] == [m["content"] for m in sent][:4]  # as it was sent
    assert all(p.tokens > 0 for p in reply.parts) and reply.tokens >= sum(p.tokens for p in reply.parts) * 0.8
    shown = daemon.cli("show", sid, "--prompt").stdout
    assert "system" in shown and "user #0" in shown and "assistant #3" in shown and "Answer briefly." in shown


def test_continue_asks_the_model_to_go_on_after_an_answer_cut_at_its_limit(client, daemon, standin):
    """Issue 41: `ask` says how to go on after an answer cut at its limit; `/continue` in
    `ctxkeep chat` sends the request to go on, a question of its own in history."""
    from ctxkeep.clients.present import CONTINUE
    sid = client.create_session(model="qwen2.5:7b", name="long", num_ctx=2048).session.id
    standin.script(" ".join(f"word{i}" for i in range(3000)))
    asked = daemon.cli("ask", "long", "Tell me everything.")
    assert "/continue in `ctxkeep chat` asks it to go on" in asked.stderr + asked.stdout
    chat = daemon.cli("chat", "long", input="/continue\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    assert standin.chats[-1].body["messages"][-1]["content"] == CONTINUE
    assert client.history(sid, limit=10).messages[2].content == CONTINUE
