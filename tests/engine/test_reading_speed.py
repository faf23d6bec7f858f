"""What a model's reading and writing speeds are learnt from (issue 42): llama.cpp's server
says how long it read and wrote (`timings`); a server that says nothing of its prompt cache
(llama-cpp-python's) is timed to its first token, over the tokens its cache did not hold,
which the backend estimates from the prefix a prompt shares with the one it sent before.
Counting the cached tokens as read made Gemma 3 270M look three times faster than it is,
and recall's block, bounded by the reading time, three times too large."""

import asyncio

import pytest

from ctxkeep.daemon.backends.openai_backend import OpenAIBackend
from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras
from ctxkeep.daemon.backends.server_cache import shared_share
from ctxkeep.daemon.context.speeds import Speeds
from openai_standin import OpenAIStandin

MODEL = "qwen2.5:7b"


def question(turn: int) -> dict[str, str]:
    return {"role": "user", "content": f"Turn {turn}: " + " ".join(f"word{turn}x{i}" for i in range(120))}


def chat(standin: OpenAIStandin, turns: int = 3) -> list[ChatChunk]:
    """The last chunk of each turn of a chat: each prompt is the one before, its answer and
    a new question."""
    async def go() -> list[ChatChunk]:
        backend = OpenAIBackend("gpu1", standin.url, 2.0, 10.0)
        finals, messages = [], []
        try:
            for turn in range(turns):
                messages.append(question(turn))
                chunks = [c async for c in backend.stream_chat(MODEL, messages, {"num_ctx": 4096}, ChatExtras())]
                finals.append(chunks[-1])
                messages.append({"role": "assistant", "content": "".join(c.content for c in chunks)})
        finally:
            await backend.close()
        return finals
    return asyncio.run(go())


def summary(standin: OpenAIStandin) -> ChatChunk:
    async def go() -> ChatChunk:
        backend = OpenAIBackend("gpu1", standin.url, 2.0, 10.0)
        try:
            return await backend.chat_once(MODEL, [question(9)], {"num_ctx": 4096, "num_predict": 200})
        finally:
            await backend.close()
    return asyncio.run(go())


def learnt(finals: list[ChatChunk]) -> Speeds:
    speeds = Speeds()
    for final in finals:
        speeds.observe(MODEL, final)
    return speeds


def test_the_share_of_a_prompt_that_opens_it_as_it_opened_the_last_one():
    first = [{"role": "user", "content": "abcd"}]
    assert shared_share([], first) == 0.0
    assert shared_share(first, first) == 1.0
    longer = shared_share(first, first + [{"role": "assistant", "content": "efgh"}])
    assert 0.3 < longer < 0.6
    assert shared_share(first, [{"role": "user", "content": "abXX"}]) == 0.8  # up to where it differs
    assert shared_share(first, [{"role": "system", "content": "abcd"}]) < 0.2  # the role is part of it
    # whole messages, then the first that differs, to its last shared character
    long = [{"role": "user", "content": "x" * 1000}, {"role": "assistant", "content": "y" * 500 + "z"}]
    changed = [long[0], {"role": "assistant", "content": "y" * 500 + "w"}, {"role": "user", "content": "q"}]
    total = sum(len(f"\x00{m['role']}\x01{m['content']}") for m in changed)
    assert shared_share(long, changed) == (total - len("\x00user\x01q") - 1) / total


def test_llama_cpps_timings_are_its_speeds():
    standin = OpenAIStandin().start()  # llama.cpp's server: 2 ms a token read, 20 written
    try:
        finals = chat(standin) + [summary(standin)]
    finally:
        standin.stop()
    speed = learnt(finals).of(MODEL)
    assert speed.read == pytest.approx(500, rel=0.01) and speed.write == pytest.approx(50, rel=0.01)
    assert finals[-1].prompt_eval_duration > 0  # a whole answer too, by the server's own timings


def test_a_server_that_does_not_say_what_it_cached_is_judged_by_the_prefix_it_was_sent():
    standin = OpenAIStandin(flavor="plain", usage_in_stream=False).start()  # llama-cpp-python's
    def answer(messages: list) -> str:
        return " ".join(f"answer{len(messages)}x{i}" for i in range(40))
    standin.reply_fn = answer
    try:
        finals = chat(standin, turns=4)
        whole = summary(standin)
    finally:
        standin.stop()
    assert all(f.prompt_eval_cached_count is None for f in finals)
    assert finals[0].cached_estimate == 0
    for turn, (before, now) in enumerate(zip(finals, finals[1:])):
        # the server holds the last prompt and the answer it wrote, but the first answer's
        # count, asked after it, left only that prompt; the new question is not held
        held = before.prompt_eval_count + (standin.count(answer([None] * (2 * turn + 1))) if turn else 0)
        assert held * 0.97 <= now.cached_estimate <= held * 1.05, (turn, held, now.cached_estimate)
        assert now.cached_estimate < now.prompt_eval_count
    # a whole answer without timings: reading and writing cannot be told apart, nothing is learnt
    assert whole.prompt_eval_duration == whole.eval_duration == 0
    assert learnt([whole]).of(MODEL).read == 0


def test_tokens_the_cache_served_are_not_counted_as_read():
    final = ChatChunk(done=True, prompt_eval_count=1500, cached_estimate=1000, eval_count=40,
                      prompt_eval_duration=2 * 10**9, eval_duration=10**9)
    assert learnt([final]).of(MODEL).read == 250  # 500 tokens read in 2 s, not 1,500
    said = ChatChunk(done=True, prompt_eval_count=1500, prompt_eval_cached_count=500, cached_estimate=1000,
                     eval_count=40, prompt_eval_duration=2 * 10**9, eval_duration=10**9)
    assert learnt([said]).of(MODEL).read == 500  # the server's word over the estimate


def test_a_server_that_leaves_usage_out_of_its_streams_counts_each_prompt_before_its_answer():
    """After the count after the first answer (llama-cpp-python's server ignores include_usage),
    each prompt is counted before its answer streams: the server's cache then ends with the
    answer, which the next prompt holds, instead of with the prompt counted after it."""
    standin = OpenAIStandin(flavor="plain", usage_in_stream=False).start()
    try:
        finals = chat(standin)
    finally:
        standin.stop()
    kinds = ["count" if c.body.get("max_tokens") == 1 else "answer" for c in standin.chats]
    assert kinds == ["answer", "count", "count", "answer", "count", "answer"]
    streamed = [c for c in standin.chats if not c.body.get("max_tokens") == 1]
    assert [f.prompt_eval_count for f in finals] == [c.prompt_tokens for c in streamed]
    assert all(f.prompt_eval_duration > 0 for f in finals)  # reading timed by the count that read it
