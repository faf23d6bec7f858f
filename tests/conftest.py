"""Fixtures (the Ollama stand-in, the real daemon in a thread or a process of its own, on
temporary XDG folders) and the pyramid: each test is marked with its level, the folder it
lives in, so `pytest -m unit` (or engine, daemon, process, window) runs one level.

- unit/     pure functions and single classes, the store on a temporary LMDB; no daemon
- engine/   the engine in-process (tests/inprocess.py): services and handlers on its
            EventBus, no transport, a model backend in memory or the stand-in
- daemon/   the real daemon served from a thread of the test's process, driven over its
            ZeroMQ sockets by the client library and the CLI, the stand-in as Ollama
- process/  ctxkeepd as a process of its own: signals, SIGKILLs, restarts, systemd units,
            the CLI in a terminal, what its log and its memory say
- window/   the Qt window (offscreen), its parts alone and against the daemon
- realmodel/ the daemon against a real model: llama.cpp's server (llama-cpp-python) with a
            small GGUF model; a step of its own (`./test.sh -m realmodel`)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

import scheduling
from ctxkeep.clients import Client
from ctxkeep.protocol.events import (
    CompactionResult,
    Event,
    GenerationError,
    ResponseGeneration,
    SessionUpdated,
)
from file_tree import write_tree
from harness import DaemonProcess, DaemonThread
from ollama_standin import OllamaStandin
from real_model import free_port, llama, proxy, real  # noqa: F401 - free_port, and the realmodel tests' fixtures
from window_steps import app, open_window, window_without_daemon  # noqa: F401 - the window tests' fixtures

#: The pyramid's levels, cheapest first: each is a folder of tests/ and a marker.
LEVELS = ("unit", "engine", "daemon", "process", "window", "realmodel")
#: Whether a test of this process failed (its temporary folders are then kept).
FAILED = pytest.StashKey[bool]()


def temporary_root() -> Path:
    """This process's temporary folder (every store, socket and file a test makes), in RAM
    where the machine has it (/dev/shm). LMDB syncs each commit: on a disk that is ~0.1 ms
    of CPU and ~0.3 ms of waiting, tens of thousands of times a run; on tmpfs nothing. The
    same code makes the same calls; a sync matters only to a power cut, which no test makes.
    Its path stays short: an ipc:// socket's path is limited to 107 characters."""
    shm = Path("/dev/shm")
    usable = shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 2 << 30
    return Path(tempfile.mkdtemp(prefix="ckt-", dir=shm if usable else "/tmp"))


def pytest_configure(config: pytest.Config) -> None:
    """No test reads or writes the user's own configuration, data or chat history: the
    XDG folders of this process point into a temporary folder, and the environment's
    overrides of the configuration (where Ollama and the daemon are) are dropped. Every
    temporary folder is made in `temporary_root()`, removed at the end unless a test failed
    (pytest names the failed test's folder)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # the window's tests draw off screen
    root = temporary_root()
    tempfile.tempdir = os.environ["TMPDIR"] = str(root)  # this process's and its children's
    home = root / "home"
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        os.environ[name] = str(home / name.lower())
    for name in ("OLLAMA_HOST", "CTXKEEP_CONTROL", "CTXKEEP_EVENTS", "CTXKEEP_SERVER_KEY"):
        os.environ.pop(name, None)
    config.add_cleanup(lambda: config.stash.get(FAILED, False) or shutil.rmtree(root, ignore_errors=True))
    for level in LEVELS:
        config.addinivalue_line("markers", f"{level}: a test of the {level} level (tests/{level}/)")
    config.addinivalue_line("markers", "early: a test of many seconds, dealt to the front of a worker's "
                                       "first share (tests/scheduling.py)")
    config.pluginmanager.register(scheduling, "ctxkeep-scheduling")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[FAILED] = exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its level: the folder it lives in."""
    for item in items:
        level = item.path.parent.name
        if level not in LEVELS:
            raise pytest.UsageError(f"{item.nodeid}: tests live in one of tests/{{{','.join(LEVELS)}}}/")
        item.add_marker(getattr(pytest.mark, level))


def events_until(client: Client, done, timeout: float, what: str) -> list[Event]:
    """Every event up to and including the first for which `done(event)` is true."""
    seen: list[Event] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        item = client.next_event(timeout=deadline - time.monotonic())
        if item is None:
            break
        seen.append(item[1])
        if done(item[1]):
            return seen
    raise AssertionError(f"no {what} within {timeout} s: saw {seen[-20:]}")


def wait_terminal(client: Client, generation_id: str, timeout: float = 30.0) -> tuple[Event, list[Event]]:
    """Read events until the generation's terminal event: (that event, every event of it)."""
    seen: list[Event] = []
    try:
        end = client.follow(generation_id, seen.append, timeout=timeout)
    except TimeoutError:
        raise AssertionError(f"no terminal event for generation {generation_id} within {timeout} s: "
                             f"saw {seen[-20:]}") from None
    return end, seen


def wait_for(client: Client, kinds, timeout: float = 10.0, where=lambda e: True) -> Event:
    """The next event of the given kind(s) that satisfies `where`, within `timeout`."""
    return events_until(client, lambda e: isinstance(e, kinds) and where(e), timeout, f"{kinds} event")[-1]


def talkative(standin, words: int = 60) -> None:
    """Long answers, short summaries (made of the words summarized, as a summary is: a
    checkpoint's check finds it about its source): so that a checkpoint really is smaller."""
    def reply(messages):
        last = messages[-1]["content"]
        if last.startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            body = last.split("\n\n", 1)[-1] if "conversation above" not in last else messages[-2]["content"]
            said = [w for w in body.replace(":", " ").split() if w.isalnum() and len(w) > 3][:3]
            return f"Summary: the user and the assistant discussed {' '.join(said) or 'the plan'}."
        return " ".join(f"detail{i}" for i in range(words))
    standin.reply_fn = reply


TERMINAL = (ResponseGeneration, GenerationError, CompactionResult)


def until_idle(client: Client, session_id: str, job_id: str, timeout: float = 30.0) -> list[Event]:
    """Every event until the job's terminal event and then the session's `busy: false`
    (the queue is empty: automatic compaction after a turn is done too)."""
    ended = False

    def done(event: Event) -> bool:
        nonlocal ended
        if isinstance(event, TERMINAL) and job_id in (getattr(event, "generation_id", None),
                                                       getattr(event, "compaction_id", None)):
            ended = True
            return False
        return ended and isinstance(event, SessionUpdated) and event.session_id == session_id \
            and not event.session.busy
    return events_until(client, done, timeout, f"end of job {job_id} and idle session {session_id}")


def idle(client: Client, session_id: str, timeout: float = 30.0) -> None:
    """Until the session is idle (its queue empty: the work after a turn done), after a turn
    `Client.turn` returned."""
    try:
        client.settle(session_id, timeout=timeout)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None


@pytest.fixture
def watched_http() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records the path of every request it gets (what must
    never be fetched): (its base URL, the paths asked)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"type": "string"}')

        def log_message(self, *args) -> None:
            pass
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()


@pytest.fixture
def standin() -> Iterator[OllamaStandin]:
    server = OllamaStandin().start()
    yield server
    server.stop()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder of small files of every kind that @file references read (tests/file_tree.py)."""
    return write_tree(tmp_path)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary folder with a short path (ipc:// paths are limited to 107 characters)."""
    path = Path(tempfile.mkdtemp(prefix="ck"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def daemon_factory(short_tmp: Path, standin: OllamaStandin) -> Iterator:
    """Make (not start) daemons; all are stopped at the end of the test."""
    made: list[DaemonProcess] = []

    def make(ollama_url: str | None = None) -> DaemonProcess:
        d = DaemonProcess(short_tmp, ollama_url or standin.url)
        made.append(d)
        return d
    yield make
    for d in made:  # stopped as a user stops them (its workers and their fork server with it), else killed
        if d.proc is not None and d.proc.poll() is None:
            try:
                d.stop(signal.SIGTERM, timeout=5)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def daemon(short_tmp: Path, standin: OllamaStandin) -> Iterator[DaemonThread]:
    """A running daemon talking to the stand-in, served from a thread of this process
    (tests that need its process — signals, restarts, its log — use daemon_factory)."""
    d = DaemonThread(short_tmp, standin.url).start()
    yield d
    d.stop()


@pytest.fixture
def daemon_process(daemon_factory) -> DaemonProcess:
    """A running daemon in a process of its own, talking to the stand-in."""
    return daemon_factory().start()


@pytest.fixture
def client(daemon: DaemonProcess) -> Iterator[Client]:
    with daemon.client() as c:
        c.subscribe("")
        yield c


@pytest.fixture
def door(short_tmp: Path, standin: OllamaStandin) -> Iterator[DaemonThread]:
    """A daemon whose HTTP front door also listens on loopback TCP, with a token."""
    d = DaemonThread(short_tmp, standin.url, http_listen=f"127.0.0.1:{free_port()}").start()
    yield d
    d.stop()


def raw_socket(daemon) -> zmq.Socket:
    """A bare DEALER on the daemon's control socket: frames the client library would never send."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(daemon.control)
    return sock


def raw_request(sock: zmq.Socket, payload: bytes, timeout_ms: int = 5000) -> dict:
    """Send one raw frame on `raw_socket`'s socket; its reply, decoded."""
    sock.send(payload)
    assert sock.poll(timeout_ms), "no reply"
    return json.loads(sock.recv())
