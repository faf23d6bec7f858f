"""Both kinds of model backend through the same tests, in-process against stand-ins that
speak each API over real HTTP: Ollama's (`OllamaBackend`) and OpenAI's (`OpenAIBackend`,
as llama.cpp's server, vLLM and llama-cpp-python's server answer). Then the engine whole
(tests/inprocess.py) over each: turns whose count is the server's, and a long chat in a
small window that compaction keeps from ever being refused or cut."""

import asyncio

import pytest

from ctxkeep.daemon.backends.backend import OllamaBackend
from ctxkeep.daemon.backends.configured import backend_for
from ctxkeep.daemon.backends.openai_backend import OpenAIBackend
from ctxkeep.daemon.backends.protocol import ChatExtras, ModelCallError
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.config.backends import BackendConfig
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import CompactionResult, GenerationError, ResponseGeneration
from inprocess import InProcess
from ollama_standin import OllamaStandin
from openai_standin import OpenAIStandin

MODEL = "qwen2.5:7b"
KINDS = ["ollama", "openai"]


@pytest.fixture(params=KINDS)
def server(request):
    """A stand-in of each kind (OpenAI's as llama.cpp's server, a 4,096 window)."""
    standin = (OllamaStandin() if request.param == "ollama" else OpenAIStandin(n_ctx=4096)).start()
    yield standin
    standin.stop()


def kind_of(standin: OllamaStandin) -> str:
    return "openai" if isinstance(standin, OpenAIStandin) else "ollama"


def backend_of(standin: OllamaStandin, url: str, **kwargs):
    if isinstance(standin, OpenAIStandin):
        return OpenAIBackend("gpu1", url, 2.0, 10.0, **kwargs)
    return OllamaBackend(url, 2.0, 10.0)


def run(standin: OllamaStandin, body, url: str = "", **kwargs):
    async def go():
        backend = backend_of(standin, url or standin.url, **kwargs)
        try:
            return await body(backend)
        finally:
            await backend.close()
    return asyncio.run(go())


async def chat(backend, messages, options=None, extras=ChatExtras(), on_sent=None):
    return [c async for c in backend.stream_chat(MODEL, messages, options or {"num_ctx": 4096},
                                                 extras, on_sent)]


def test_a_chat_streams_with_the_servers_exact_count(server):
    sent: list[int] = []
    chunks = run(server, lambda b: chat(b, [{"role": "user", "content": "Why is the sky blue today?"}],
                                        {"num_ctx": 4096, "num_predict": 300}, on_sent=lambda: sent.append(1)))
    text, last = "".join(c.content for c in chunks), chunks[-1]
    assert text.startswith("You said") and last.done and last.done_reason == "stop"
    assert last.prompt_eval_count == server.chats[-1].prompt_tokens > 0 and last.eval_count > 0
    assert sent == [1] and last.host in ("ollama", "gpu1")
    if kind_of(server) == "openai":  # the room the window leaves, as max_tokens; no num_ctx
        assert server.chats[-1].body["max_tokens"] == 300 and "num_ctx" not in server.chats[-1].body


def test_an_unfinished_answer_is_sent_to_be_continued(server):
    """/continue sends the answer so far as the model's own last message: Ollama and
    llama.cpp's server go on from it; an OpenAI server is also told so as vLLM reads it
    (`continue_final_message`, no new generation prompt); a plain question is not."""
    messages = [{"role": "user", "content": "Count to ten."}, {"role": "assistant", "content": "One, two,"}]
    run(server, lambda b: chat(b, messages))
    body = server.chats[-1].body
    assert body["messages"][-1] == {"role": "assistant", "content": "One, two,"}
    if kind_of(server) == "openai":
        assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
        run(server, lambda b: chat(b, messages[:1]))
        assert "continue_final_message" not in server.chats[-1].body


def test_a_prompt_over_the_window_is_refused_never_cut(server):
    long = [{"role": "user", "content": "word " * 5000}]

    async def body(backend):
        with pytest.raises(ModelCallError) as caught:
            await chat(backend, long, {"num_ctx": 4096})
        return caught.value
    error = run(server, body)
    assert error.code == ErrorCode.CONTEXT_OVERFLOW and "compact" in error.message
    assert server.refusals and not server.truncations


def test_the_window_comes_from_what_the_server_says(server):
    facts = run(server, lambda b: b.facts(MODEL))
    assert facts.context_length == (32768 if kind_of(server) == "ollama" else 4096)


@pytest.mark.parametrize("flavor,configured,expected", [("vllm", 0, 2048), ("plain", 0, 0), ("plain", 1500, 1500)])
def test_an_openai_servers_window_from_vllm_or_from_config(flavor, configured, expected):
    standin = OpenAIStandin(n_ctx=2048, flavor=flavor).start()
    try:
        facts = run(standin, lambda b: b.facts(MODEL), context_length=configured)
    finally:
        standin.stop()
    assert facts.context_length == expected


def test_a_server_that_leaves_usage_out_of_its_stream_is_asked_the_count():
    """llama-cpp-python's server ignores include_usage: the count is asked whole, once."""
    standin = OpenAIStandin(usage_in_stream=False).start()
    try:
        chunks = run(standin, lambda b: chat(b, [{"role": "user", "content": "count me please"}]))
    finally:
        standin.stop()
    streamed, asked = standin.chats
    assert chunks[-1].prompt_eval_count == streamed.prompt_tokens == asked.prompt_tokens
    assert asked.body["max_tokens"] == 1 and not asked.body.get("stream")


@pytest.mark.parametrize("flavor, pages, way", [("llamacpp", True, "llamacpp"), ("vllm", True, "vllm"),
                                                ("llamacpp", False, "reading"), ("plain", False, "reading")])
def test_a_prompt_is_counted_before_it_is_sent_by_the_servers_tokenizer(flavor, pages, way):
    """llama.cpp's server writes the prompt by its template (/apply-template) and tokenizes
    it; vLLM counts the messages (/tokenize); a server with neither page (llama-cpp-python)
    reads the prompt once for one token. The count is the one the chat then reports."""
    standin = OpenAIStandin(flavor=flavor, tokenizer_pages=pages).start()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]
    tools = [{"type": "function", "function": {"name": "weather", "description": "The weather in a city",
                                               "parameters": {"type": "object", "properties": {}}}}]

    async def body(backend):
        counted = [await backend.count_prompt(MODEL, messages, tools), await backend.count_prompt(MODEL, messages)]
        return counted, backend._counter.way, await chat(backend, messages, extras=ChatExtras(tools=tools))
    try:
        (with_tools, plain), found, chunks = run(standin, body)
    finally:
        standin.stop()
    assert with_tools == chunks[-1].prompt_eval_count == standin.chats[-1].prompt_tokens
    assert 0 < plain < with_tools and found == way
    assert len(standin.chats) == (3 if way == "reading" else 1)  # counted by reading: one token each


def test_ollama_counts_a_prompt_by_reading_it_for_one_token():
    """Ollama has no tokenizer page: the server reads the prompt for one token of answer,
    with the chat's window (so the model is not loaded again). The count is the one the
    chat then reports; a prompt over the window is refused by the server, not cut, and
    counts as unknown; an Ollama older than 0.12 (which would cut it) is not asked."""
    standin = OllamaStandin().start()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]
    huge = [{"role": "user", "content": "word " * 3000}]

    async def body(backend):
        await backend.check()
        counted = await backend.count_prompt(MODEL, messages, None, {"num_ctx": 2048})
        over = await backend.count_prompt(MODEL, huge, None, {"num_ctx": 2048})
        backend.status.version = "0.11.4"
        old = await backend.count_prompt(MODEL, messages, None, {"num_ctx": 2048})
        return counted, over, old, await chat(backend, messages, {"num_ctx": 2048})
    try:
        counted, over, old, chunks = run(standin, body)
        reading, refused, answered = standin.chats
    finally:
        standin.stop()
    assert counted == chunks[-1].prompt_eval_count == answered.prompt_tokens > 0
    assert reading.body["options"] == {"num_ctx": 2048, "num_predict": 1} and reading.num_ctx == answered.num_ctx
    assert over is None and refused.refused and standin.truncations == []
    assert old is None  # not asked: three chats in all


def test_a_tool_call_comes_whole_and_its_result_answers_it(server):
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    server.script_tool_call("weather", {"city": "Paris", "days": [1, 2]})
    question = [{"role": "user", "content": "weather?"}]

    async def body(backend):
        first = await chat(backend, question, extras=ChatExtras(tools=tools))
        calls = [c for chunk in first for c in chunk.tool_calls]
        answer = {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]}
        result = {"role": "tool", "content": "sunny", "tool_name": "weather"}
        second = await chat(backend, [*question, answer, result], extras=ChatExtras(tools=tools))
        return calls, first[-1], second[-1]
    calls, first, second = run(server, body)
    assert [(c.function.name, c.function.arguments) for c in calls] == [("weather", {"city": "Paris", "days": [1, 2]})]
    assert second.done and not server.orphans
    if kind_of(server) == "openai":
        assert first.done_reason == "tool_calls"


def test_embeddings_and_the_model_list(server):
    async def body(backend):
        return await backend.embed("nomic-embed-text", ["a", "b c"]), await backend.installed()
    vectors, models = run(server, body)
    assert len(vectors) == 2 and len(vectors[0]) == 64
    assert MODEL in [m.name for m in models]


def test_an_unknown_model_and_a_down_server_say_what_to_do(server):
    async def missing(backend):
        with pytest.raises(ModelCallError) as caught:
            async for _ in backend.stream_chat("nope:1b", [{"role": "user", "content": "hi"}], {}, ChatExtras()):
                pass
        return caught.value
    assert run(server, missing).code == ErrorCode.MODEL_NOT_FOUND
    url = server.url
    server.stop()

    async def down(backend):
        with pytest.raises(ModelCallError) as caught:
            await chat(backend, [{"role": "user", "content": "hi"}])
        return caught.value, backend.status
    error, status = run(server, down, url)
    assert error.code == ErrorCode.OLLAMA_UNREACHABLE and not status.reachable
    assert "start it" in error.message


def test_a_servers_error_is_named_for_its_kind(server):
    """An error status from the server: `ollama_error` from Ollama, `model_server_error` from
    an OpenAI-compatible server (which is no Ollama)."""
    server.fail_next("http500")

    async def body(backend):
        with pytest.raises(ModelCallError) as caught:
            await chat(backend, [{"role": "user", "content": "hi"}])
        return caught.value
    error = run(server, body)
    assert error.code == (ErrorCode.OLLAMA_ERROR if kind_of(server) == "ollama" else ErrorCode.MODEL_SERVER_ERROR)


def test_a_stream_cut_midway_is_an_interrupted_answer(server):
    server.fail_next("drop", after_chunks=3)

    async def body(backend):
        got = []
        with pytest.raises(ModelCallError) as caught:
            async for chunk in backend.stream_chat(MODEL, [{"role": "user", "content": "one two three four five"}],
                                                   {"num_ctx": 4096}, ChatExtras()):
                got.append(chunk)
        return got, caught.value
    got, error = run(server, body)
    assert error.code == ErrorCode.STREAM_INTERRUPTED and got and not any(c.done for c in got)


# -- the engine whole, over each kind -------------------------------------------------


def app_over(tmp_path, standin: OllamaStandin, num_ctx: int) -> InProcess:
    table = BackendConfig(name="here", kind=kind_of(standin), url=standin.url)
    config = Config(num_ctx=num_ctx, backends=[table])
    return InProcess(tmp_path, backend_for(config), config)


@pytest.mark.parametrize("kind", KINDS)
def test_a_long_chat_in_a_small_window_compacts_and_is_never_refused_or_cut(tmp_path, kind):
    """Thirty turns of long answers in a 2,048 window (the OpenAI server's own), over the
    real backend and HTTP: every turn completes with the server's count, compaction runs,
    no prompt is refused or cut."""
    standin = OllamaStandin() if kind == "ollama" else OpenAIStandin(n_ctx=2048)

    def reply(messages):
        if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            return "Summary: the user and the assistant discussed the plan."
        return " ".join(f"detail{i}" for i in range(80))
    standin.reply_fn = reply
    standin.start()
    app = app_over(tmp_path, standin, 2048)

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        jobs = []
        for turn in range(30):
            jobs.append((await app.call(requests.Send(session=sid, text=f"step {turn} " * 20))).generation_id)
            await app.services.jobs.drain(30)
            app.services.jobs.closing = False
        await app.backend.close()
        return jobs
    try:
        jobs = asyncio.run(go())
    finally:
        standin.stop()
        app.close()
    ends = {e.generation_id: e for e in app.of_type(ResponseGeneration)}
    assert not app.of_type(GenerationError) and set(jobs) <= set(ends)
    turns = [c for c in standin.chats if not c.body["messages"][-1]["content"].startswith("Conversation to")]
    counted = [ends[j].token_count for j in jobs]
    assert counted == [c.prompt_tokens for c in turns if c.body.get("stream", True)][-30:]
    assert any(e.status == "ok" for e in app.of_type(CompactionResult))
    assert not standin.refusals and not standin.truncations
    assert all(ends[j].host == "here" and ends[j].token_count_exact for j in jobs)
