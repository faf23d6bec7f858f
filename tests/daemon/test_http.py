"""The HTTP front door driven by clients nobody here wrote: the `ollama` and `openai` Python
libraries and curl, against the real daemon (in a thread) and the stand-in as Ollama."""

import json
import socket
import subprocess
import threading

import httpx
import ollama
import openai
import pytest

from conftest import events_until, talkative, wait_for
from ctxkeep.daemon.config import ConfigError
from ctxkeep.daemon.transports.http.listeners import check
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from harness import DaemonThread

MODEL = "qwen2.5:7b"


def ollama_client(door: DaemonThread) -> ollama.Client:
    return ollama.Client(host=door.http.url,
                         headers={"Authorization": f"Bearer {door.http.token}"})


def openai_client(door: DaemonThread, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=door.http.url + "/v1", api_key=key or door.http.token,
                         max_retries=0)


def curl(door: DaemonThread, path: str, body: dict | None = None, *extra: str) -> tuple[int, str]:
    """curl over the Unix socket (no token): (status, body)."""
    args = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", str(door.http_socket)]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    done = subprocess.run(args + list(extra) + [f"http://localhost{path}"], capture_output=True,
                          text=True, timeout=30)
    text, _, status = done.stdout.rpartition("\n")
    return int(status), text


def sessions(door: DaemonThread) -> list:
    with door.client() as c:
        return c.sessions().sessions


def test_the_ollama_library_chats_lists_shows_and_embeds(door, standin):
    client = ollama_client(door)
    answer = client.chat(model=MODEL, messages=[{"role": "user", "content": "Hello there"}])
    assert answer.message.role == "assistant" and answer.message.content.startswith("You said")
    assert answer.done and answer.prompt_eval_count == standin.chats[-1].prompt_tokens
    pieces = list(client.chat(model=MODEL, stream=True, messages=[
        {"role": "user", "content": "Hello there"}, {"role": "assistant", "content": answer.message.content},
        {"role": "user", "content": "And again"}]))
    assert pieces[-1].done and not any(p.done for p in pieces[:-1])
    assert "".join(p.message.content for p in pieces).startswith("You said")
    assert pieces[-1].prompt_eval_count == standin.chats[-1].prompt_tokens
    assert MODEL in [m.model for m in client.list().models]
    assert client.show(MODEL).details.family
    assert len(client.embed(model="nomic-embed-text", input=["a", "b"]).embeddings) == 2
    assert len(sessions(door)) == 1  # the second request continued the first one's session


def test_a_conversation_continued_is_one_session_and_an_edited_one_branches(door, standin):
    client = ollama_client(door)
    first = [{"role": "user", "content": "Tell me about tea"}]
    a1 = client.chat(model=MODEL, messages=first).message.content
    second = first + [{"role": "assistant", "content": a1}, {"role": "user", "content": "And coffee?"}]
    a2 = client.chat(model=MODEL, messages=second).message.content
    (one,) = sessions(door)
    assert one.name == "Tell me about tea"
    with door.client() as c:
        history = c.history(one.id).messages
    assert [m.content for m in history] == ["Tell me about tea", a1, "And coffee?", a2]
    # the client edits its second question (whitespace alone does not count as an edit)
    edited = first + [{"role": "assistant", "content": "  " + a1.replace(" ", "  ")},
                      {"role": "user", "content": "And cocoa?"}]
    client.chat(model=MODEL, messages=edited)
    branch = next(s for s in sessions(door) if s.id != one.id)
    assert branch.name == "Tell me about tea (branch)"
    assert (branch.branched_from, branch.branched_at) == (one.id, history[1].seq)
    listed = door.cli("sessions").stdout
    assert f"Tell me about tea @{history[1].seq}" in listed  # `ctxkeep sessions` shows it
    with door.client() as c:
        assert [m.content for m in c.history(branch.id).messages][:3] == ["Tell me about tea", a1, "And cocoa?"]
        assert len(c.history(one.id).messages) == 4  # the original is untouched
    # an explicit session by name
    client._client.headers["X-Ctxkeep-Session"] = "notes"
    client.chat(model=MODEL, messages=[{"role": "user", "content": "first note"}])
    client.chat(model=MODEL, messages=[{"role": "user", "content": "second note"}])
    named = next(s for s in sessions(door) if s.name == "notes")
    with door.client() as c:
        assert [m.content for m in c.history(named.id).messages if m.role == "user"] == \
            ["first note", "second note"]


def test_the_openai_library_chats_streams_lists_and_gets_its_own_errors(door, standin):
    client = openai_client(door)
    done = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert done.choices[0].message.content.startswith("You said")
    assert done.choices[0].finish_reason == "stop"
    assert done.usage.prompt_tokens == standin.chats[-1].prompt_tokens
    chunks = list(client.chat.completions.create(
        model=MODEL, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).startswith("You said")
    assert chunks[-1].usage.prompt_tokens == standin.chats[-1].prompt_tokens
    assert MODEL in [m.id for m in client.models.list()]
    assert len(client.embeddings.create(model="nomic-embed-text", input=["a"]).data) == 1
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-model:1b", messages=[{"role": "user", "content": "Hi"}])
    with pytest.raises(openai.BadRequestError, match="(?i)fit|window|overflow|num_ctx"):
        client.chat.completions.create(model=MODEL, extra_body={"num_ctx": 256},
                                       messages=[{"role": "user", "content": "word " * 3000}])
    with pytest.raises(openai.AuthenticationError):
        openai_client(door, key="wrong").models.list()


def test_num_ctx_reaches_ollama_through_openai(door, standin):
    """What Ollama's own /v1 drops: num_ctx, as an extra body field, is the session's window."""
    openai_client(door).chat.completions.create(model=MODEL, extra_body={"num_ctx": 4096},
                                                messages=[{"role": "user", "content": "Hi"}])
    assert standin.chats[-1].num_ctx == 4096 and standin.chats[-1].num_ctx_sent


def test_format_think_and_keep_alive_reach_the_model_as_each_library_names_them(door, standin):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    ollama_client(door).chat(model="thinker:8b", messages=[{"role": "user", "content": "Where?"}],
                             format=schema, think="low", keep_alive="10m")
    sent = standin.chats[-1].body
    assert (sent["format"], sent["think"], sent["keep_alive"]) == (schema, "low", "10m")
    openai_client(door).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Where?"}], reasoning_effort="high",
        response_format={"type": "json_schema", "json_schema": {"name": "where", "schema": schema}})
    sent = standin.chats[-1].body
    assert (sent["format"], sent["think"]) == (schema, "high")
    openai_client(door).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Where?"}], response_format={"type": "json_object"})
    assert standin.chats[-1].body["format"] == "json"
    with pytest.raises(openai.BadRequestError, match="response_format"):
        openai_client(door).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}], response_format={"type": "yaml"})
    status, body = curl(door, "/api/chat", {"model": MODEL, "format": "xml",
                                            "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and "format" in json.loads(body)["error"]


def test_curl_speaks_both_apis_over_the_unix_socket_without_a_token(door, standin):
    assert curl(door, "/") == (200, "Ollama is running")
    status, body = curl(door, "/api/chat", {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]})
    lines = [json.loads(line) for line in body.splitlines()]
    assert status == 200 and lines[-1]["done"] and lines[-1]["prompt_eval_count"] > 0
    status, body = curl(door, "/v1/chat/completions", {
        "model": MODEL, "stream": True, "messages": [{"role": "user", "content": "Hi"}]})
    assert status == 200 and body.strip().endswith("data: [DONE]")
    status, body = curl(door, "/api/chat", {"model": MODEL, "messages": [{"role": "assistant", "content": "x"}]})
    assert status == 400 and "user" in json.loads(body)["error"]
    assert curl(door, "/api/chat", None, "-d", "{not json")[0] == 400


def test_over_tcp_a_token_is_refused_or_accepted(door):
    url = door.http.url + "/api/tags"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.get(url, headers={"Authorization": f"Bearer {door.http.token}"}).status_code == 200


def test_no_token_is_refused_on_an_address_other_machines_reach():
    check("127.0.0.1:11435", "none")
    check("[::1]:11435", "none")
    check("0.0.0.0:11435", "token")
    with pytest.raises(ConfigError, match="loopback"):
        check("0.0.0.0:11435", "none")


def test_http_turns_are_published_on_zeromq_and_a_client_that_leaves_cancels_its_turn(door, standin):
    with door.client() as watcher:
        watcher.subscribe("")
        ollama_client(door).chat(model=MODEL, messages=[{"role": "user", "content": "Watch me"}])
        wait_for(watcher, ResponseGeneration, timeout=30)
        talkative(standin, words=400)  # a long, slow answer to leave in the middle of
        standin.chunk_delay = 0.02
        with httpx.stream("POST", door.http.url + "/api/chat", timeout=30,
                          headers={"Authorization": f"Bearer {door.http.token}"},
                          json={"model": MODEL, "messages": [{"role": "user", "content": "Go away"}]}) as r:
            next(r.iter_lines())  # one piece, then the client is gone
        seen = events_until(watcher, lambda e: isinstance(e, (GenerationError, ResponseGeneration)),
                            30, "the turn's end")
        assert isinstance(seen[-1], GenerationError) and seen[-1].code == "cancelled"
        session = next(s for s in sessions(door) if s.name == "Go away")
        assert watcher.history(session.id).messages[-1].status == "interrupted"


def test_a_client_that_sends_half_a_request_and_stops_stalls_no_other(door, standin):
    host, port = door.http.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as slow, \
            socket.socket(socket.AF_UNIX) as slower:
        slow.sendall(b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{\"mo")
        slower.connect(str(door.http_socket))
        slower.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHo")
        answer = ollama_client(door).chat(model=MODEL, messages=[{"role": "user", "content": "Still here?"}])
        assert answer.done and answer.message.content
        status, _ = curl(door, "/api/tags")
        assert status == 200


def test_fifty_concurrent_chats_all_answered(door, standin):
    client = ollama_client(door)
    errors: list[BaseException] = []

    def chat(i: int) -> None:
        try:
            client.chat(model=MODEL, messages=[{"role": "user", "content": f"conversation {i}"}])
        except BaseException as exc:  # reported below
            errors.append(exc)
    threads = [threading.Thread(target=chat, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(sessions(door)) == 50


def test_the_cli_says_where_the_front_door_listens(door):
    result = door.cli("daemon", "http")
    assert result.returncode == 0, result.stderr
    assert str(door.http_socket) in result.stdout
    assert f"OLLAMA_HOST={door.http.url}" in result.stdout and "/v1" in result.stdout
    assert "bearer token in" in result.stdout and "API key the token" in result.stdout
