"""OpenAI-compatible servers as they are found in the wild (issue 39): llama.cpp's server
listing a model by its file's path, llama-cpp-python's that leaves `usage` out of a stream,
drops system messages with some chat formats and cuts an answer short for any request
that comes beside it, and a server that sends nothing at all."""

import time

import pytest

from conftest import wait_terminal
from ctxkeep.daemon.config.backends import BackendConfig
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from harness import DaemonThread
from ollama_standin import Model
from openai_standin import OpenAIStandin

MODEL = "gemma3:270m"


def daemon_on(short_tmp, server: OpenAIStandin, **settings) -> DaemonThread:
    return DaemonThread(short_tmp, server.url, default_model=MODEL, backends=[
        BackendConfig(name="llama", kind="openai", url=server.url + "/v1")], **settings).start()


@pytest.fixture
def server():
    s = OpenAIStandin(models=(Model(name=MODEL, context_length=4096),
                              Model(name="nomic-embed-text", embedding=True)), n_ctx=4096)
    yield s
    s.stop()


def turn(client, sid, text="hello there"):
    return wait_terminal(client, client.send(sid, text).generation_id)[0]


def test_a_model_listed_by_its_path_is_named_as_users_name_it(short_tmp, server):
    server.listed_as_paths = True
    server.start()
    d = daemon_on(short_tmp, server)
    try:
        with d.client() as c:
            c.subscribe("")
            assert [m.name for m in c.models().models] == [MODEL, "nomic-embed-text"]
            sid = c.create_session(model=MODEL).session.id
            assert isinstance(turn(c, sid), ResponseGeneration)
        assert server.chats[-1].body["model"] == f"/models/{MODEL}.gguf"  # the server's own id
    finally:
        d.stop()


def test_a_template_that_drops_system_messages_still_gets_what_they_say(short_tmp, server):
    server.drops_system = True
    server.usage_in_stream = False  # llama-cpp-python's: the answer is counted by its chunks
    server.start()
    d = daemon_on(short_tmp, server)
    try:
        with d.client() as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL, system="Always answer in French.").session.id
            done = turn(c, sid)
            assert isinstance(done, ResponseGeneration) and done.eval_count > 0
        sent = server.chats[-1].body["messages"]
        assert [m["role"] for m in sent] == ["user"]
        assert sent[0]["content"].startswith("Always answer in French.") and sent[0]["content"].endswith("hello there")
    finally:
        d.stop()


def test_nothing_is_sent_to_a_one_slot_server_while_it_streams(short_tmp, server):
    """Recall's embeddings (of the new message, of the history) wait while the only server
    streams an answer: a request beside the stream would cut it short."""
    server.chunk_delay = 0.02
    server.start()
    d = daemon_on(short_tmp, server, embed_model="nomic-embed-text")
    try:
        with d.client() as c:
            c.subscribe("")
            history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"fact number {i} is {i * 7}"}
                       for i in range(400)]  # embedded in the background, a batch at a time
            sid = c.import_session(name="long", model=MODEL, messages=history).session.id
            for i in range(3):
                assert isinstance(turn(c, sid, f"tell me about fact {i} " * 20), ResponseGeneration)
                time.sleep(0.5)  # a user reads the answer: the server is idle, the embedder goes on
        assert server.beside_streams == []
        assert server.posts.count("/v1/embeddings") > 1  # the history was embedded, between answers
    finally:
        d.stop()


def test_a_server_that_sends_nothing_ends_the_turn_with_a_clear_error(short_tmp, server):
    server.first_token_delay = 30
    server.start()
    d = daemon_on(short_tmp, server, first_token_timeout=1.0)
    try:
        with d.client() as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL).session.id
            end = turn(c, sid)
            assert isinstance(end, GenerationError) and end.code == "ollama_not_answering"
    finally:
        d.stop()


@pytest.mark.parametrize("flavor", ["llamacpp", "vllm"])
def test_what_the_servers_prompt_cache_served_is_read_as_each_server_says_it(short_tmp, server, flavor):
    """Issue 42: llama.cpp's server says it as `timings.cache_n` on its last chunk, vLLM (and
    OpenAI) as `usage.prompt_tokens_details.cached_tokens`."""
    server.flavor = flavor
    server.start()
    d = daemon_on(short_tmp, server)
    try:
        with d.client() as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL, system="Be brief and kind. " * 10).session.id
            ends = [turn(c, sid, f"question number {i} about rivers") for i in range(3)]
            cached = [e.cached_tokens for e in ends]
            assert None not in cached and cached[0] < cached[1] <= cached[2]  # the system prompt on, then more
            assert c.usage(sid).usage.cache_hit_rate > 0
    finally:
        d.stop()
