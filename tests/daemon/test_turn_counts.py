"""What a turn through the real daemon counts and shows: the usage after it, num_ctx, the
count the next prompt holds (whatever the server counts of its cache), what the cache
served, the prompt part by part, an answer continued past its limit."""

import pytest

from conftest import wait_terminal
from ctxkeep.protocol.events import (
    ContextUsage,
    ResponseGeneration,
)

MODEL = "qwen2.5:7b"


def test_usage_event_after_turn(client, standin):
    s = client.create_session(model=MODEL).session
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
    s = client.create_session(model="small:1b", num_ctx=16384).session  # the model knows only 4096
    acc = client.send(s.id, "hello")
    end, _ = wait_terminal(client, acc.generation_id)
    body = standin.chats[-1].body
    assert body["options"]["num_ctx"] == 4096
    assert body["truncate"] is False
    assert end.window == 4096
    assert client.session(s.id).session.window == 4096


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
    """Issue 41: `ask` says how to go on after an answer cut at its limit; issue 59: `/continue`
    in `ctxkeep chat` has the model go on from the answer itself (sent as its own unfinished
    message, as Ollama continues it) and stores the whole in its place, no new question."""
    sid = client.create_session(model="qwen2.5:7b", name="long", num_ctx=2048).session.id
    standin.script(" ".join(f"word{i}" for i in range(3000)))
    asked = daemon.cli("ask", "long", "Tell me everything.")
    assert "/continue in `ctxkeep chat` asks it to go on" in asked.stderr + asked.stdout
    first = client.history(sid, limit=10).messages[1]
    assert first.done_reason == "length"
    standin.script("and so on, to the end.")
    chat = daemon.cli("chat", "long", input="/continue\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    sent = standin.chats[-1].body["messages"]
    assert sent[-1] == {"role": "assistant", "content": first.content} and sent[-2]["content"] == "Tell me everything."
    history = client.history(sid, limit=10).messages
    assert [m.role for m in history] == ["user", "assistant", "assistant"]  # no new question
    whole = history[-1]
    assert whole.content == first.content + "and so on, to the end." and whole.alternative_of == first.seq
    active = [m.seq for m in client.history(sid, limit=10, active=True).messages]
    assert active == [0, whole.seq]  # the whole answer in place of the one it went on from