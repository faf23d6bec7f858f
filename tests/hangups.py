"""Clients that hang up at random moments, then retry (over HTTP, and over ZeroMQ) (the hang-up property's test in
tests/process/test_hangups.py, and bench/hangups.py at scale): what they leave behind."""

import json
import random
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

import zmq

from ctxkeep.clients import Client
from ctxkeep.protocol import encode, requests
from ctxkeep.protocol.paths import http_socket

MODEL = "qwen2.5:7b"
#: When a client hangs up after sending its request (seconds): before the daemon read it,
#: before `accepted`, while the answer streams, after it.
DELAYS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.15)
#: The share of rounds asked over ZeroMQ, in these named sessions (the rest over HTTP).
ZMQ_SHARE = 1 / 3
ZMQ_SESSIONS = ("zmq-a", "zmq-b", "zmq-c")


def raw(path: str, body: dict, headers: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{head}"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data


def send(sock_path: str, request: bytes, hang_up_after: float | None) -> bytes:
    """The request over the daemon's Unix socket; hung up `hang_up_after` seconds after it
    was sent (None: the whole answer read)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(request)
    if hang_up_after is not None:
        time.sleep(hang_up_after)
        s.close()
        return b""
    s.settimeout(60)
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    s.close()
    return out


@dataclass
class Outcome:
    """What the rounds left: retries not answered, questions stored more than once or not
    answered, sessions made empty, and the store's check after a clean stop."""

    rounds: int = 0
    failed_retries: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    empty_sessions: int = 0
    check: str = ""
    #: lines of the daemon's log at ERROR, and tracebacks (a client's own hang-up is neither)
    errors: list[str] = field(default_factory=list)


def http_round(door: str, rng: random.Random, question: str, out: Outcome) -> str:
    """The question sent streaming over HTTP and hung up at a random moment (either API,
    stateless or in a named session), then sent again and read whole; its session's name."""
    name = f"named-{rng.randrange(10**9)}" if rng.random() < 0.5 else ""
    path = "/v1/chat/completions" if rng.random() < 0.5 else "/api/chat"
    headers = {"X-Ctxkeep-Session": name} if name else {}
    body = {"model": MODEL, "messages": [{"role": "user", "content": question}], "stream": True}
    send(door, raw(path, body, headers), hang_up_after=rng.choice(DELAYS))
    if not send(door, raw(path, {**body, "stream": False}, headers), hang_up_after=None).startswith(b"HTTP/1.1 200"):
        out.failed_retries.append(question)
    return name


def zmq_hang_up(control: str, session: str, question: str, after: float) -> None:
    """`send` over ZeroMQ from a client that goes away `after` seconds later, its socket
    closed at once (a request still on its way out is dropped: never asked)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.connect(control)
    sock.send(encode(requests.Send(session=session, text=question)))
    time.sleep(after)
    sock.close(linger=0)


def zmq_retry(c: Client, session: str, question: str) -> bool:
    """What a ZeroMQ client that comes back does: the question sent again only if it was
    not stored (a stored one is the session's turn, answered whether its client stayed or
    not); True once it is answered."""
    time.sleep(0.05)  # a request that got out has reached the daemon
    c.settle(session, timeout=60)
    if not any(m.content == question for m in c.history(session, limit=1000).messages):
        c.follow(c.send(session, question).generation_id, None, timeout=60)
        c.settle(session, timeout=60)
    messages = c.history(session, limit=1000).messages
    asked = [m.seq for m in messages if m.content == question]
    return any(m.role == "assistant" and m.status == "complete" and m.reply_to in asked for m in messages)


def hang_ups(daemon, rounds: int, seed: int = 59) -> Outcome:
    """`rounds` questions, each sent streaming and hung up at a random moment (both APIs,
    stateless or in a named session), then sent again and read whole; then a clean stop
    and `ctxkeepd check --settled`; the daemon's log is read for errors and tracebacks."""
    door = str(http_socket(daemon.control))
    rng = random.Random(seed)
    asked: list[tuple[str, str]] = []
    out = Outcome(rounds)
    with daemon.client(timeout=30) as c:
        c.subscribe("")
        for name in ZMQ_SESSIONS:
            c.create_session(name=name, model=MODEL)
        for n in range(rounds):
            question = f"Question {n}: what do you make of the number {rng.randint(1000, 9999)}?"
            if rng.random() < ZMQ_SHARE:
                name = rng.choice(ZMQ_SESSIONS)
                zmq_hang_up(daemon.control, name, question, rng.choice(DELAYS))
                if not zmq_retry(c, name, question):
                    out.failed_retries.append(question)
            else:
                name = http_round(door, rng, question, out)
            asked.append((question, name))
    with daemon.client() as c:
        deadline = time.monotonic() + 60
        while any(s.busy for s in c.sessions().sessions) and time.monotonic() < deadline:
            time.sleep(0.1)
        listed = c.sessions().sessions
        histories = {s.id: c.history(s.id, limit=1000).messages for s in listed}
    out.empty_sessions = sum(1 for s in listed if not histories[s.id] and s.name not in ZMQ_SESSIONS)
    for question, _ in asked:
        copies = [(sid, m) for sid, h in histories.items() for m in h if m.content == question]
        if len(copies) != 1:
            out.duplicates.append(question)
        if not any(m.role == "assistant" and m.status == "complete" and m.reply_to == q.seq
                   for sid, q in copies for m in histories[sid]):
            out.unanswered.append(question)
    daemon.stop()
    store = daemon.root / "data" / "ctxkeep" / "store"
    checked = subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main", "check", "--settled", str(store)],
                             capture_output=True, text=True, env=daemon.env)
    out.check = "" if checked.returncode == 0 else checked.stdout + checked.stderr
    out.errors = daemon.log_errors()
    return out
