"""The HTTP front door's edges (issue 39): every value checked before anything is stored,
nothing fetched for a schema, no page of another origin and no rebound name let in, and no
client able to hold more than its share of connections or time."""

import http.client
import json
import socket
import time

import pytest

from conftest import free_port
from harness import DaemonThread

MODEL = "qwen2.5:7b"


@pytest.fixture
def open_door(short_tmp, standin):
    """A front door on loopback TCP without a token (as the README offers for Open WebUI),
    with small connection limits."""
    d = DaemonThread(short_tmp, standin.url, http_listen=f"127.0.0.1:{free_port()}", http_auth="none",
                     http_max_connections=8, http_idle_timeout=0.6, http_body_timeout=0.6,
                     http_origins=["https://chat.example"]).start()
    yield d
    d.stop()


def call(door: DaemonThread, method: str, path: str, body=None, headers=None, raw: bytes | None = None
         ) -> tuple[int, dict, dict]:
    """One request over TCP: (status, its JSON body, its headers)."""
    host, port = door.http.listen.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=20)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    text = response.read()
    connection.close()
    return response.status, (json.loads(text) if text.strip() else {}), dict(response.getheaders())


def chat(text: str, **extra) -> dict:
    return {"model": MODEL, "stream": False, "messages": [{"role": "user", "content": text}], **extra}


def stored(door: DaemonThread) -> list:
    with door.client() as c:
        return c.sessions().sessions


@pytest.mark.parametrize("options, says", [
    ({"num_ctx": "4096"}, "num_ctx: Expected `int | null`, got `str`"),
    ({"num_ctx": [4096]}, "num_ctx: Expected `int | null`, got `array`"),
    ({"num_ctx": 10**30}, "num_ctx: Expected `int` <= 16777216"),
    ({"num_ctx": 2**63}, "num_ctx: Expected `int` <= 16777216"),
    ({"num_ctx": -1}, "num_ctx: Expected `int` >= 256"),
    ({"num_ctx": 1}, "num_ctx: Expected `int` >= 256"),
    ({"temperature": 10**30}, "options.temperature: Expected `int` <= 9007199254740992"),
    ({"stop": ["x"] * 100}, "options.stop: Expected `array` of length <= 64"),
    ({"nonsense": 1}, "Ollama has no option 'nonsense'"),
])
def test_out_of_range_settings_are_400s_that_store_nothing(open_door, options, says):
    status, body, _ = call(open_door, "POST", "/api/chat", chat("hello", options=options))
    assert status == 400 and body["error"].startswith(says)
    assert stored(open_door) == []  # nothing stored, and listing still answers


def test_the_openai_api_checks_the_same_ranges(open_door):
    status, body, _ = call(open_door, "POST", "/v1/chat/completions", {
        "model": MODEL, "messages": [{"role": "user", "content": "hi"}], "num_ctx": 2**63})
    assert status == 400 and body["error"]["message"] == "num_ctx: Expected `int` <= 16777216"
    status, body, _ = call(open_door, "POST", "/v1/chat/completions", {
        "model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**20})
    assert status == 400 and "options.num_predict" in body["error"]["message"]
    assert stored(open_door) == []


def test_a_tool_call_whose_arguments_are_not_an_object_is_refused_and_the_store_stays_readable(open_door):
    messages = [{"role": "user", "content": "look it up"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "lookup", "arguments": "[1, 2]"}}]},
                {"role": "tool", "content": "found", "tool_name": "lookup"}]
    status, body, _ = call(open_door, "POST", "/api/chat", {"model": MODEL, "stream": False, "messages": messages})
    assert status == 400
    assert "the arguments of its call to 'lookup' are list, not an object" in body["error"]
    assert stored(open_door) == []


def test_a_schema_that_names_a_url_is_refused_without_fetching_it(open_door, watched_http):
    base, hits = watched_http
    url = base + "/internal"
    status, body, _ = call(open_door, "POST", "/api/chat", chat("hello", format={"$ref": url}))
    assert status == 400 and "points outside the schema" in body["error"]
    status, body, _ = call(open_door, "POST", "/v1/chat/completions", {
        "model": MODEL, "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#"}}}})
    assert status == 400 and "refers to itself without end" in body["error"]["message"]
    assert hits == [] and stored(open_door) == []
    with open_door.client() as c:  # the ZeroMQ side refuses it too, before storing the question
        sid = c.create_session(model=MODEL).session.id
        with pytest.raises(Exception, match="points outside the schema"):
            c.send(sid, "hello", format={"$ref": url})
        assert c.history(sid).messages == []
    assert hits == []


def test_malformed_bodies_and_headers_are_400s_not_500s(open_door):
    assert call(open_door, "POST", "/api/chat", raw=b'{"model": "m", "messages": [{"role": "user", '
                b'"content": "\xff\xfe"}]}')[0] == 400
    assert call(open_door, "POST", "/api/chat", chat("hi"), headers={"X-Ctxkeep-Session": "\udcff"
                .encode("utf-8", "surrogateescape").decode("latin-1")})[0] == 400
    deep = json.dumps(chat("hi")).replace('"hi"', '"hi", "x": ' + "[" * 2000 + "]" * 2000)
    status, body, _ = call(open_door, "POST", "/api/chat", raw=deep.encode())
    assert status == 400, body
    assert stored(open_door) == []


def test_pages_of_other_origins_and_rebound_names_are_refused(open_door):
    evil = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    status, body, _ = call(open_door, "POST", "/api/chat", chat("write into a session"), headers=evil)
    assert status == 403 and "origin 'http://evil.example' is not allowed" in body["error"]
    port = open_door.http.listen.rsplit(":", 1)[1]
    status, body, _ = call(open_door, "POST", "/api/chat", chat("rebound"), headers={"Host": f"evil.example:{port}"})
    assert status == 403 and "is not this machine" in body["error"]
    status, _, headers = call(open_door, "OPTIONS", "/api/chat", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert stored(open_door) == []
    for origin in ("https://chat.example", "http://localhost:3000"):  # configured, and Ollama's default
        status, _, headers = call(open_door, "OPTIONS", "/v1/chat/completions", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST"})
        assert status == 204 and headers["Access-Control-Allow-Origin"] == origin
        assert "Authorization" in headers["Access-Control-Allow-Headers"]
    status, body, headers = call(open_door, "POST", "/api/chat", chat("from a page I allowed"),
                                 headers={"Origin": "https://chat.example", "Host": f"localhost:{port}"})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == "https://chat.example"


def test_a_web_page_cannot_use_the_token_either(door):
    token = door.http.token
    status, _, _ = call(door, "GET", "/api/tags", headers={"Authorization": f"Bearer {token}",
                                                           "Origin": "http://evil.example"})
    assert status == 403


def test_the_token_is_asked_for_as_rfc_7235_says(door, standin):
    status, _, headers = call(door, "GET", "/v1/models")
    assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="ctxkeepd"'
    token = door.http.token
    assert call(door, "GET", "/v1/models", headers={"Authorization": f"bearer {token}"})[0] == 200
    assert call(door, "GET", "/v1/models", headers={"Authorization": f"Basic {token}"})[0] == 401


def test_connections_past_the_cap_are_told_so_and_idle_ones_are_closed(open_door):
    host, port = open_door.http.listen.rsplit(":", 1)
    idle = [socket.create_connection((host, int(port))) for _ in range(8)]
    half = idle[-1]
    half.sendall(b"POST /api/chat HTTP/1.1\r\nHost: localhost\r\nContent-Le")  # never finished
    extra = socket.create_connection((host, int(port)))
    # past the cap less its trusted slots (6 of 8), the oldest connections without the token make room
    for s in idle[:3]:
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 503 Service Unavailable")
    for s in idle[3:] + [extra]:  # the rest closed by the idle timeout, half-sent headers included
        s.settimeout(5)
        assert s.recv(4096) == b""
    slow = socket.create_connection((host, int(port)))
    slow.sendall(b"POST /api/chat HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{")  # a body that never arrives
    slow.settimeout(5)
    assert slow.recv(4096).startswith(b"HTTP/1.1 408")
    status, _, _ = call(open_door, "GET", "/api/version")  # and the door still serves
    assert status in (200, 502)


def test_port_zero_reports_the_port_it_got(short_tmp, standin):
    d = DaemonThread(short_tmp, standin.url, http_listen="127.0.0.1:0").start()
    try:
        host, port = d.http.listen.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0 and d.http.url.endswith(f":{port}")
        status, _, _ = call(d, "GET", "/v1/models", headers={"Authorization": f"Bearer {d.http.token}"})
        assert status == 200
    finally:
        d.stop()


def test_malformed_requests_log_once_a_source_not_a_traceback_each(open_door, caplog):
    host, port = open_door.http.listen.rsplit(":", 1)
    for _ in range(30):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
        s.settimeout(5)
        s.recv(100)
        s.close()
    time.sleep(0.2)
    lines = [r for r in caplog.records if "Error handling request" in r.getMessage()]
    assert len(lines) <= 1 and all(r.exc_info is None for r in lines)


def test_large_requests_are_bounded_before_they_cost_anything(short_tmp, standin):
    d = DaemonThread(short_tmp, standin.url, http_listen=f"127.0.0.1:{free_port()}", http_auth="none",
                     http_max_messages=50, http_max_body_bytes=200_000).start()
    try:
        many = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(201)]
        status, body, _ = call(d, "POST", "/api/chat", {"model": MODEL, "stream": False, "messages": many})
        assert status == 413 and "at most 50 are taken (http_max_messages)" in body["error"]
        status, body, _ = call(d, "POST", "/v1/chat/completions", {"model": MODEL, "messages": many[:51]})
        assert status == 413 and "51 messages in one request" in body["error"]["message"]
        status, body, _ = call(d, "POST", "/api/chat", chat("word " * 50_000))
        assert status == 413 and "http_max_body_bytes" in body["error"]
        status, body, _ = call(d, "POST", "/api/chat", chat("x" * 190_000, options={"num_ctx": 2048}))
        assert status == 400 and "190,000 characters: no tokenizer fits that in the window of 2,048" in body["error"]
        assert stored(d) == []
        with d.client() as c:  # the same refusal over ZeroMQ, before the question is stored
            sid = c.create_session(model=MODEL, num_ctx=1024).session.id
            with pytest.raises(Exception, match="no tokenizer fits that"):
                c.send(sid, "y" * 70_000)
            assert c.history(sid).messages == []
    finally:
        d.stop()


def test_a_retried_question_is_asked_again_in_its_session_not_stored_twice(open_door, standin):
    standin.fail_next("http500")
    status, _, _ = call(open_door, "POST", "/api/chat", chat("What is the capital of France?"))
    assert status >= 500
    status, body, _ = call(open_door, "POST", "/api/chat", chat("What is the capital of France?"))
    assert status == 200 and body["message"]["content"]
    (session,) = stored(open_door)
    with open_door.client() as c:
        history = c.history(session.id).messages
    assert [(m.role, m.status) for m in history] == [("user", "complete"), ("assistant", "interrupted"),
                                                     ("assistant", "complete")]


def test_pulls_only_from_ollamas_registries_and_generate_takes_sends_image_limits(open_door):
    status, body, _ = call(open_door, "POST", "/api/pull", {"model": "registry.evil.example/x/model:1b"})
    assert status == 403 and "is not a registry ctxkeepd pulls from" in body["error"]
    status, body, _ = call(open_door, "POST", "/api/pull", {"model": "evil.example:5000/x/model"})
    assert status == 403
    for name in ("evil\u3002com/x/model", "evil\uff0ecom/x/model", "ｅvil.com/x"):  # dots and letters IDNA maps
        status, body, _ = call(open_door, "POST", "/api/pull", {"model": name})
        assert status == 400 and "model names are ASCII" in body["error"], name
    tiny = "iVBORw0KGgo="
    status, body, _ = call(open_door, "POST", "/api/generate", {"model": MODEL, "prompt": "what is it?",
                                                               "images": [tiny] * 9, "stream": False})
    assert status == 400 and "at most 8" in body["error"]
    status, body, _ = call(open_door, "POST", "/api/generate", {"model": MODEL, "prompt": "what is it?",
                                                               "images": ["A" * 8_000_000], "stream": False})
    assert status in (400, 413)


def test_a_slow_answer_is_not_cut_by_the_idle_timeout(open_door, standin):
    """The idle timeout closes connections that wait between requests, not one whose
    request the model is still answering (here 1.5 s to the first token, the timeout 0.6 s)."""
    standin.first_token_delay = 1.5
    status, body, _ = call(open_door, "POST", "/api/chat", chat("take your time"))
    assert status == 200 and body["message"]["content"]
    host, port = open_door.http.listen.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=20)
    connection.request("POST", "/api/chat", body=json.dumps({**chat("and stream it"), "stream": True}))
    response = connection.getresponse()
    lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    assert response.status == 200 and lines[-1]["done"] is True


def test_tokenless_tcp_connections_never_lock_out_the_owner(short_tmp, standin):
    """A local user holds many idle TCP connections without the token: the owner's clients
    over the Unix socket and with the token over TCP are all served (each listener has its
    own cap, and connections without the token are closed first to make room)."""
    d = DaemonThread(short_tmp, standin.url, http_listen=f"127.0.0.1:{free_port()}",
                     http_max_connections=16, http_idle_timeout=30).start()
    try:
        host, port = d.http.listen.rsplit(":", 1)
        squatters = [socket.create_connection((host, int(port))) for _ in range(60)]
        served = 0
        for _ in range(10):
            status, _, _ = call(d, "GET", "/api/tags", headers={"Authorization": f"Bearer {d.http.token}"})
            served += status == 200
            unix = socket.socket(socket.AF_UNIX)
            unix.connect(str(d.http_socket))
            unix.sendall(b"GET /api/version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            unix.settimeout(5)
            served += unix.recv(4096).startswith(b"HTTP/1.1 200")
            unix.close()
        assert served == 20
        for s in squatters:
            s.close()
    finally:
        d.stop()
