"""The Ollama backend in-process against the stand-in (real HTTP): what it sends, what
it makes of answers and failures."""

import asyncio
import sys

import pytest

from ctxkeep.daemon.backends.backend import OllamaBackend
from ctxkeep.daemon.backends.protocol import ChatExtras, ModelCallError
from ctxkeep.protocol import ErrorCode
from ollama_standin import OllamaStandin

MODEL = "qwen2.5:7b"


def run(coro):
    return asyncio.run(coro)


async def with_backend(url: str, body):
    backend = OllamaBackend(url, connect_timeout=2.0, read_timeout=10.0)
    try:
        return await body(backend)
    finally:
        await backend.close()


def test_a_chat_streams_and_asks_ollama_to_refuse_overflow(standin: OllamaStandin):
    async def body(backend: OllamaBackend):
        chunks = [c async for c in backend.stream_chat(
            MODEL, [{"role": "user", "content": "hi"}], {"num_ctx": 2048}, ChatExtras())]
        return "".join(c.content for c in chunks), chunks[-1]
    text, last = run(with_backend(standin.url, body))
    assert text and last.done and last.prompt_eval_count > 0
    sent = standin.chats[-1]
    assert sent.body["truncate"] is False and sent.body["options"]["num_ctx"] == 2048
    assert not {"think", "format", "keep_alive"} & set(sent.body)  # unset: Ollama's defaults


def test_a_chat_passes_think_format_and_keep_alive_as_ollama_names_them(standin: OllamaStandin):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    extras = ChatExtras(think="low", format=schema, keep_alive="10m")

    async def body(backend: OllamaBackend):
        async for _ in backend.stream_chat(MODEL, [{"role": "user", "content": "hi"}],
                                           {"num_ctx": 2048}, extras):
            pass
    run(with_backend(standin.url, body))
    sent = standin.chats[-1].body
    assert (sent["think"], sent["format"], sent["keep_alive"]) == ("low", schema, "10m")


class ImportsSeen:
    """A meta-path finder that finds nothing and records what was looked for: a module
    already imported is never looked for, so any name here is an import on the way."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path, target=None):
        self.names.append(name)
        return None


def test_a_streamed_chat_imports_nothing_once_warm(standin: OllamaStandin, monkeypatch):
    """Nothing on a turn's model call looks for a module (httpcore without sniffio tried
    to import it several times per request, each time searching sys.path)."""
    seen = ImportsSeen()

    async def chat(backend: OllamaBackend) -> None:
        async for _ in backend.stream_chat(MODEL, [{"role": "user", "content": "hi"}],
                                           {"num_ctx": 2048}, ChatExtras()):
            pass

    async def body(backend: OllamaBackend) -> None:
        await chat(backend)  # warm: the client's own lazy imports happen once
        monkeypatch.setattr(sys, "meta_path", [seen, *sys.meta_path])
        await chat(backend)
    run(with_backend(standin.url, body))
    assert seen.names == []


def test_the_transport_says_when_a_chat_request_is_out(standin: OllamaStandin):
    standin.first_token_delay = 0.05  # the model answers well after the request is in
    seen: list[str] = []

    async def body(backend: OllamaBackend):
        stream = backend.stream_chat(MODEL, [{"role": "user", "content": "hi"}], {"num_ctx": 2048}, ChatExtras(),
                                     on_sent=lambda: seen.append(f"sent with {len(standin.chats)} chats in"))
        first = asyncio.ensure_future(anext(stream))  # in a task of its own, as a turn's is
        seen.append(f"chunk: {(await first).content!r}")
        async for _ in stream:  # the rest, read in another task: no second report
            pass
        await backend.facts(MODEL)  # another request of the same client: not a chat, no report
    run(with_backend(standin.url, body))
    assert len(seen) == 2 and seen[0].startswith("sent with") and seen[1].startswith("chunk: ")


def test_an_overflowing_prompt_is_refused_not_cut(standin: OllamaStandin):
    async def body(backend: OllamaBackend):
        return await backend.chat_once(MODEL, [{"role": "user", "content": "word " * 900}],
                                       {"num_ctx": 256})
    with pytest.raises(ModelCallError) as caught:
        run(with_backend(standin.url, body))
    assert caught.value.code == ErrorCode.CONTEXT_OVERFLOW
    assert standin.refusals and not standin.truncations


def test_check_reports_the_version_and_facts_come_from_show(standin: OllamaStandin):
    async def body(backend: OllamaBackend):
        return await backend.check(), await backend.facts("small:1b")
    status, facts = run(with_backend(standin.url, body))
    assert status.reachable and status.version
    assert facts.context_length == 4096 and facts.parameter_size == "1.2B"


def test_facts_said_before_are_given_at_once_and_say_nothing_of_whether_the_server_is_up(standin: OllamaStandin):
    """Every turn asks its model's facts: once a server said them, they come without a call
    (the server may be gone by then), and a server marked down stays down: its cached facts
    are no answer from it."""
    from ctxkeep.daemon.backends.host import Host
    from ctxkeep.daemon.backends.hosts import Hosts
    host = Host(OllamaBackend(standin.url, connect_timeout=2.0, read_timeout=10.0))
    hosts = Hosts([host])

    async def go():
        said = await hosts.facts("small:1b")
        standin.stop()
        hosts.routing.down(host)
        host.retry_at = 0.0  # due to be tried again
        again = await hosts.facts("small:1b")
        await hosts.close()
        return said, again
    said, again = run(go())
    assert again == said and said.context_length == 4096
    assert host.failures == 1  # still down


def test_unreachable_and_unknown_model_say_what_to_do(standin: OllamaStandin):
    async def down(backend: OllamaBackend):
        status = await backend.check()
        with pytest.raises(ModelCallError) as caught:
            await backend.facts(MODEL)
        return status, caught.value
    status, error = run(with_backend("http://127.0.0.1:9", down))
    assert not status.reachable
    assert error.code == ErrorCode.OLLAMA_UNREACHABLE and "OLLAMA_HOST" in error.message

    async def missing(backend: OllamaBackend):
        with pytest.raises(ModelCallError) as caught:
            await backend.facts("nope:1b")
        return caught.value
    error = run(with_backend(standin.url, missing))
    assert error.code == ErrorCode.MODEL_NOT_FOUND and "ollama pull nope:1b" in error.message


def test_every_backend_has_every_member_of_the_protocol():
    """The engine is typed against ModelBackend; each backend must provide all of it."""
    from ctxkeep.daemon.backends.host import Host
    from ctxkeep.daemon.backends.hosts import Hosts
    from ctxkeep.daemon.backends.openai_backend import OpenAIBackend
    from ctxkeep.daemon.backends.protocol import ModelBackend
    members = {n for n in vars(ModelBackend) if not n.startswith("_")} | \
        set(ModelBackend.__annotations__)
    ollama = OllamaBackend("http://127.0.0.1:9", 1.0, 1.0)
    for backend in (ollama, OpenAIBackend("o", "http://127.0.0.1:9", 1.0, 1.0), Hosts([Host(ollama)])):
        missing = [n for n in members if not hasattr(backend, n)]
        assert not missing and len(members) >= 11, type(backend).__name__


def test_a_proxied_host_keeps_its_proxy_and_no_proxy_is_respected(monkeypatch):
    from ctxkeep.daemon.backends.transport import proxy_for
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert proxy_for("http://ollama.lan:11434") == "http://proxy.example:3128"
    assert proxy_for("http://127.0.0.1:11434") is None
    monkeypatch.delenv("HTTP_PROXY")
    assert proxy_for("http://ollama.lan:11434") is None


@pytest.mark.parametrize("body", [b'{"model":"m","messages":[]}', b"{}", b'{ "model": "m" }'])
def test_truncate_is_put_into_any_chat_body_and_nothing_else_changes(body):
    import json

    import httpx

    from ctxkeep.daemon.backends.refuse_overflow import RefuseOverflow
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    async def post(path: str) -> None:
        async with httpx.AsyncClient(transport=RefuseOverflow(httpx.MockTransport(answer)),
                                     base_url="http://ollama") as client:
            await client.post(path, content=body, headers={"content-type": "application/json"})
    run(post("/api/chat"))
    run(post("/api/show"))
    sent = json.loads(seen[0].content)
    assert sent == {**json.loads(body), "truncate": False}
    assert int(seen[0].headers["content-length"]) == len(seen[0].content)
    assert seen[1].content == body  # other calls pass untouched
