"""Several model servers behind the real daemon: an Ollama ("box1") and an OpenAI-compatible
server ("gpu1") that both serve the model. A turn goes to the least busy; a server killed
between turns sends the next turn to the other; one killed mid-answer ends that turn with
one terminal event, its partial answer kept; a server that comes back is used again; the
CLI's status and models show which is which."""

import json
import time

import pytest

from conftest import wait_terminal
from ctxkeep.daemon.config.backends import BackendConfig
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from harness import DaemonThread
from ollama_standin import OllamaStandin
from openai_standin import OpenAIStandin

MODEL = "qwen2.5:7b"


@pytest.fixture
def servers():
    box1, gpu1 = OllamaStandin().start(), OpenAIStandin(n_ctx=8192).start()
    yield box1, gpu1
    box1.stop()
    gpu1.stop()


@pytest.fixture
def two(short_tmp, servers):
    box1, gpu1 = servers
    d = DaemonThread(short_tmp, box1.url, backends=[
        BackendConfig(name="box1", kind="ollama", url=box1.url),
        BackendConfig(name="gpu1", kind="openai", url=gpu1.url + "/v1")]).start()
    with d.client() as c:
        c.subscribe("")
        yield d, c
    d.stop()


def turn(client, sid, text="hello there"):
    accepted = client.send(sid, text)
    return wait_terminal(client, accepted.generation_id)


def wait_for(check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_a_host_killed_between_turns_sends_the_next_turn_to_the_other_and_comes_back(two, servers):
    (daemon, client), (box1, gpu1) = two, servers
    sid = client.create_session(model=MODEL).session.id
    first, _ = turn(client, sid)
    assert isinstance(first, ResponseGeneration) and first.host == "box1"
    assert first.token_count == box1.chats[-1].prompt_tokens
    port = box1.port
    box1.stop()
    second, _ = turn(client, sid, "and now?")
    assert isinstance(second, ResponseGeneration) and second.host == "gpu1"
    assert second.token_count == gpu1.chats[-1].prompt_tokens  # the count is still the server's own
    status = json.loads(daemon.cli("status", "--json").stdout)
    down = {b["name"]: b for b in status["backends"]}
    assert not down["box1"]["reachable"] and down["box1"]["retry_in"] > 0 and down["gpu1"]["reachable"]
    shown = daemon.cli("status").stdout
    assert "box1 (ollama" in shown and "DOWN" in shown and "gpu1 (openai) at" in shown
    listed = daemon.cli("models").stdout
    assert "box1 at" in listed and "DOWN" in listed and MODEL in listed
    box1.start(port=port)  # back: the next status asks it again at once, whatever its wait
    assert all(b.reachable for b in client.status().status.backends), client.status().status.backends
    third, _ = turn(client, sid, "and again?")
    assert third.host == "box1"
    history = client.history(sid).messages
    assert [m.role for m in history] == ["user", "assistant"] * 3


def test_a_host_killed_mid_answer_ends_the_turn_once_with_its_partial_kept(two, servers):
    (_, client), (box1, gpu1) = two, servers
    sid = client.create_session(model=MODEL).session.id
    box1.script("one two three four five six seven eight")
    box1.fail_next("drop", after_chunks=3)
    accepted = client.send(sid, "count for me")
    end, events = wait_terminal(client, accepted.generation_id)
    terminals = [e for e in events if isinstance(e, (ResponseGeneration, GenerationError))]
    assert len(terminals) == 1 and isinstance(end, GenerationError) and end.code == "stream_interrupted"
    partial = client.history(sid).messages[-1]
    assert partial.status == "interrupted" and partial.content == "one two three "
    assert not [c for c in gpu1.chats if c.body.get("stream")]  # no answer started twice: the partial stands
    again, _ = turn(client, sid, "try again")
    assert isinstance(again, ResponseGeneration) and again.host == "gpu1"  # box1 is down for a while


def test_a_turn_goes_to_the_least_busy_host(two, servers):
    (_, client), (box1, _) = two, servers
    box1.chunk_delay = 0.15  # box1 answers slowly: it stays busy
    box1.script(" ".join(["slow"] * 10))
    a = client.create_session(model=MODEL).session.id
    b = client.create_session(model=MODEL).session.id
    slow = client.send(a, "take your time")
    assert wait_for(lambda: len(box1.chats) == 1)
    quick, _ = turn(client, b, "quick one")
    assert quick.host == "gpu1"
    end, _ = wait_terminal(client, slow.generation_id)
    assert end.host == "box1"


def test_the_window_is_the_smallest_that_any_host_gives(short_tmp, servers):
    box1, gpu1 = servers
    gpu1.n_ctx = 3000
    d = DaemonThread(short_tmp, box1.url, num_ctx=16384, backends=[
        BackendConfig(name="box1", url=box1.url), BackendConfig(name="gpu1", kind="openai", url=gpu1.url)]).start()
    try:
        with d.client() as c:
            assert c.create_session(model=MODEL).session.window == 3000
    finally:
        d.stop()


def test_ollama_clients_see_the_models_of_every_server(short_tmp):
    """/api/tags and /api/show through the front door answer for every model server: a second
    Ollama's models and an OpenAI-compatible server's, not only the first Ollama's."""
    import ollama

    from ollama_standin import Model
    first = OllamaStandin(models=(Model(name="first:1b"),)).start()
    second = OllamaStandin(models=(Model(name="second:3b", context_length=4096, parameter_size="3B"),)).start()
    other = OpenAIStandin(models=(Model(name="served-by-openai"),), n_ctx=2048).start()
    d = DaemonThread(short_tmp, first.url, default_model="first:1b", backends=[
        BackendConfig(name="a", kind="ollama", url=first.url), BackendConfig(name="b", kind="ollama", url=second.url),
        BackendConfig(name="c", kind="openai", url=other.url + "/v1")]).start()
    try:
        client = ollama.Client(host="http://localhost", transport=__import__("httpx").HTTPTransport(
            uds=str(d.http_socket)))
        names = [m.model for m in client.list().models]
        assert sorted(names) == ["first:1b", "second:3b", "served-by-openai"]
        shown = client.show("second:3b")
        assert shown.details.parameter_size == "3B" and shown.modelinfo["qwen2.context_length"] == 4096
        assert client.show("served-by-openai").modelinfo["unknown.context_length"] == 2048
        with pytest.raises(ollama.ResponseError):
            client.show("nowhere:1b")
    finally:
        d.stop()
        for s in (first, second, other):
            s.stop()
