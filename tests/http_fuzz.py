"""Random HTTP requests against the front door (tests/process/test_http_fuzz.py runs a few
hundred, bench/http_fuzz.py 10,000): valid requests of every route with their fields
replaced, removed or added at random, bodies cut short or not JSON, headers and request
lines broken. Every one must get an answer that is not a 500, and the daemon's log must
hold no traceback."""

import json
import random
import socket
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MODEL = "qwen2.5:7b"

#: A valid body of each route (GET routes have none).
ROUTES: dict[tuple[str, str], dict[str, Any] | None] = {
    ("POST", "/api/chat"): {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": False},
    ("POST", "/api/generate"): {"model": MODEL, "prompt": "hi", "stream": False},
    ("POST", "/v1/chat/completions"): {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
    ("POST", "/api/show"): {"model": MODEL},
    ("POST", "/api/embed"): {"model": "all-minilm", "input": ["hi"]},
    ("POST", "/api/embeddings"): {"model": "all-minilm", "prompt": "hi"},
    ("POST", "/v1/embeddings"): {"model": "all-minilm", "input": "hi"},
    ("POST", "/api/pull"): {"model": MODEL, "stream": False},
    ("GET", "/api/tags"): None, ("GET", "/api/ps"): None, ("GET", "/api/version"): None,
    ("GET", "/v1/models"): None, ("GET", "/"): None,
}
#: Keys worth putting where a valid body has none.
KEYS = ["model", "messages", "prompt", "stream", "options", "format", "tools", "images", "think", "keep_alive",
        "role", "content", "tool_calls", "function", "arguments", "num_ctx", "max_tokens", "temperature",
        "input", "system", "template", "raw", "suffix", "context", "n", "stop", "seed", "logprobs",
        "response_format", "stream_options", "tool_choice", "name", "insecure", "truncate", "dimensions"]


def value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any kind, odd ones more often than a real client sends them."""
    kind = rng.randrange(14 if depth < 4 else 9)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**64, 10**30, 4096])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, 1e-320, 3.0])
    if kind == 4:
        return rng.choice(["", "user", "assistant", "system", "tool", "json", "5m", "-1", MODEL, "x" * 300])
    if kind == 5:
        return "".join(chr(rng.choice([0, 7, 0x7f, 0x200b, 0xfeff, 0x1f600, 0x3002, ord("a"), 0xd7ff]))
                       for _ in range(rng.randrange(1, 40)))
    if kind == 6:
        return "word " * rng.choice([10, 1000, 50_000])
    if kind == 7:
        return rng.choice(["data:image/png;base64,!!!", "aGVsbG8=", "=" * 9, "@/etc/passwd", "{\"a\": 1}"])
    if kind == 8:
        return "[" * 60 + "]" * 60
    if kind in (9, 10):
        return [value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if kind == 11:
        return {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}
    if kind == 12:
        return {"role": rng.choice(["user", "assistant", "tool", "system", "bot", ""]), "content": value(rng, depth + 1)}
    nested: Any = rng.choice([[], {}, "x"])
    for _ in range(rng.choice([10, 100, 900])):
        nested = [nested] if rng.random() < 0.5 else {"a": nested}
    return nested


def mutated(rng: random.Random, body: Any, depth: int = 0) -> Any:
    """`body` with one of its values replaced, a key removed or added, at any depth."""
    if isinstance(body, dict) and body:
        key = rng.choice(list(body))
        roll = rng.random()
        if roll < 0.2:
            return {k: v for k, v in body.items() if k != key}
        if roll < 0.35:
            return {**body, rng.choice(KEYS): value(rng)}
        if roll < 0.7 and isinstance(body[key], (dict, list)) and depth < 6:
            return {**body, key: mutated(rng, body[key], depth + 1)}
        return {**body, key: value(rng)}
    if isinstance(body, list) and body:
        at = rng.randrange(len(body))
        roll = rng.random()
        if roll < 0.2:
            return body[:at] + body[at + 1:]
        if roll < 0.4:
            return body + [value(rng) for _ in range(rng.randrange(1, 4))]
        return body[:at] + [mutated(rng, body[at], depth + 1)] + body[at + 1:]
    return value(rng)


def request(rng: random.Random) -> bytes:
    """One random request: mostly a route's body mutated, sometimes broken below JSON."""
    (method, path), body = rng.choice(list(ROUTES.items()))
    headers = {"Host": "localhost", "Connection": "close"}
    data = b""
    if body is not None:
        shaped = body
        for _ in range(rng.choice([1, 1, 2, 3])):
            shaped = mutated(rng, shaped)
        data = json.dumps(shaped).encode()
        headers["Content-Type"] = "application/json"
    roll = rng.random()
    if roll < 0.05 and data:
        data = data[: rng.randrange(len(data))]  # cut short
    elif roll < 0.08:
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))  # not JSON, not UTF-8
    elif roll < 0.1:
        method = rng.choice(["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "GET", "POST", "BREW", "G\x00ET"])
    elif roll < 0.12:
        path = rng.choice(["/api/../../etc/passwd", "/v1/", "/api/chat?x=" + "%" * 50, "/" + "a" * 5000,
                           "/api/chat/", "//api/chat", "/api/%00", "/v2/chat/completions"])
    elif roll < 0.14:
        headers[rng.choice(["Origin", "Authorization", "X-Ctxkeep-Session", "X-Ctxkeep-Memory", "Content-Type",
                            "Transfer-Encoding", "Expect"])] = rng.choice(
            ["null", "http://evil.example", "Bearer x", "gzip", "chunked", "100-continue", "x" * 9000, "é"])
    elif roll < 0.16:
        headers["Content-Type"] = rng.choice(["text/plain", "multipart/form-data", "application/x-www-form-urlencoded"])
    length = len(data)
    if rng.random() < 0.03 and data:
        length = rng.randrange(len(data))  # says less than it sends
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items() if k != "Transfer-Encoding")
    te = headers.get("Transfer-Encoding")
    framing = f"Transfer-Encoding: {te}\r\n" if te else f"Content-Length: {length}\r\n"
    return f"{method} {path} HTTP/1.1\r\n{head}{framing}\r\n".encode("utf-8", "replace") + data


def send(sock_path: str, raw: bytes, timeout: float = 60) -> bytes:
    """The request over the front door's Unix socket; the answer's bytes (b"": none)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    out = b""
    try:
        s.connect(sock_path)
        try:
            s.sendall(raw)
        except OSError:  # answered (and closed) before the body was read: the answer is there
            pass
        while chunk := s.recv(65536):
            out += chunk
    except OSError:
        pass  # what came before the error is the answer
    finally:
        s.close()
    return out


@dataclass
class Fuzzed:
    """What the cases were answered: statuses, the requests answered 500 (or not at all),
    and the daemon's log lines at ERROR or with a traceback."""

    cases: int = 0
    statuses: Counter = field(default_factory=Counter)
    server_errors: list[bytes] = field(default_factory=list)
    unanswered: list[bytes] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)


def fuzz(daemon, cases: int, seed: int = 60) -> Fuzzed:
    """`cases` random requests to `daemon`'s front door, one at a time."""
    from ctxkeep.protocol.paths import http_socket
    door, rng, out = str(http_socket(daemon.control)), random.Random(seed), Fuzzed(cases)
    for _ in range(cases):
        raw = request(rng)
        answer = send(door, raw)
        while answer.startswith(b"HTTP/1.1 100 "):  # an interim answer to `Expect: 100-continue`
            answer = answer[answer.find(b"\r\n\r\n") + 4:]
        status = answer[9:12].decode(errors="replace") if answer.startswith(b"HTTP/1.") else "none"
        out.statuses[status] += 1
        if status == "500":
            out.server_errors.append(raw[:400])
        elif status == "none":
            out.unanswered.append(raw[:400])
    out.log_errors = daemon.log_errors()
    return out
