"""Shared bench helpers: the stand-in and daemon harness from tests/, percentiles, JSON lines."""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from harness import DaemonProcess
from ollama_standin import OllamaStandin


def percentiles(samples_s: list[float]) -> dict[str, float]:
    """p50/p99/mean in microseconds."""
    ordered = sorted(samples_s)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6
    return {"n": len(ordered), "p50_us": round(pick(0.50), 1), "p99_us": round(pick(0.99), 1),
            "mean_us": round(statistics.fmean(ordered) * 1e6, 1)}


def emit(**fields) -> None:
    """One JSON line on stdout."""
    print(json.dumps(fields), flush=True)


def version_status(socket_path: str | Path, timeout: float = 20) -> bytes:
    """`GET /api/version` over ctxkeepd's HTTP Unix socket: the answer's status line
    (raises OSError where no answer comes)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(timeout)
        sock.connect(str(socket_path))
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = b""
        while b"\r\n" not in answer and (chunk := sock.recv(4096)):
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


@contextmanager
def standin_process(first_token_ms: float = 0.0, token_ms: float = 0.0) -> Iterator[str]:
    """The stand-in in a process of its own (so that it shares no GIL with what is
    measured), its first chunk after `first_token_ms` and each later one `token_ms` after
    the one before; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(TESTS / "ollama_standin.py"), "--port", str(port),
                             "--chunk-delay", str(token_ms / 1000), "--first-token-ms", str(first_token_ms)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "stand-in" in proc.stdout.readline()
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def daemon_for(url: str, config: str = "", code: str | None = None) -> Iterator[DaemonProcess]:
    """ctxkeepd in its own process on a throw-away store (removed after), logging warnings;
    `config`: lines for its config.toml; `code`: a folder holding the `ctxkeep` package to
    run (`checkout_at`) instead of this one."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    daemon = DaemonProcess(root, url, log_level="warning")
    if code is not None:
        daemon.env["PYTHONPATH"] = code
    if config:
        daemon.write_config(config)
    try:
        yield daemon.start()
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def bare_relay(url: str, durable: bool = False) -> Iterator[tuple[str, str]]:
    """bench/bare_relay.py in its own process against `url` (`durable`: storing each
    question in an LMDB store in a temporary folder); yields its (control, events)
    endpoints."""
    folder = Path(tempfile.mkdtemp(prefix="ckr", dir="/tmp"))
    control, events = f"ipc://{folder}/control", f"ipc://{folder}/events"
    store = [str(folder / "store")] if durable else []
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "bare_relay.py"), url,
                             control, events, *store], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield control, events
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def checkout_at(rev: str) -> Iterator[str]:
    """This repository's commit `rev` checked out in a temporary folder (a git worktree,
    removed after, its modules byte-compiled); yields a folder to put on PYTHONPATH whose
    `ctxkeep` package is that commit's (pyproject.toml maps ctxkeep.daemon to daemon/, and so
    on)."""
    repo = Path(__file__).resolve().parent.parent
    folder = Path(tempfile.mkdtemp(prefix="ckrev", dir="/tmp"))
    tree, path = folder / "tree", folder / "path"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree), rev],
                   check=True, capture_output=True)
    # byte-compiled as ./test.sh compiles this tree, even where PYTHONDONTWRITEBYTECODE is set:
    # else each of its daemons compiles every module at its start (startup.py's figures doubled)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0",
                    *(str(tree / part) for part in ("protocol", "daemon", "clients"))], check=True)
    try:
        (path / "ctxkeep").mkdir(parents=True)
        for part in ("protocol", "daemon", "clients", "systemd"):
            (path / "ctxkeep" / part).symlink_to(tree / part)
        yield str(path)
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def bare_http_relay(url: str, server: str = "aiohttp") -> Iterator[str]:
    """bench/bare_http_relay.py in its own process against `url` (on aiohttp, or Starlette
    and uvicorn); yields its URL once it answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "bare_http_relay.py"), url,
                             str(port), server], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def lmdb_commit_floor(folder: Path, n: int = 200) -> dict[str, float]:
    """A synced LMDB commit of one small record (py-lmdb alone), in `folder`'s file system:
    what storing a question costs at the least."""
    import lmdb
    path = folder / "lmdb-probe"
    env = lmdb.open(str(path), map_size=1 << 26)
    samples = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            with env.begin(write=True) as txn:
                txn.put(b"question-%d" % i, b"x" * 200)
            samples.append(time.perf_counter() - t0)
    finally:
        env.close()
        shutil.rmtree(path, ignore_errors=True)
    return percentiles(samples)


def fdatasync_floor(folder: Path, n: int = 200) -> dict[str, float]:
    """The disk's own floor: a 4-KiB write and fdatasync, in `folder`'s file system."""
    path = folder / "sync-probe"
    samples = []
    with open(path, "wb") as f:
        for _ in range(n):
            t0 = time.perf_counter()
            f.write(b"x" * 4096)
            f.flush()
            os.fdatasync(f.fileno())
            samples.append(time.perf_counter() - t0)
    path.unlink()
    return percentiles(samples)


@contextmanager
def running_daemon(chunk_delay: float = 0.0):
    """(daemon, stand-in), both running, on a throw-away store."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    standin = OllamaStandin(chunk_delay=chunk_delay).start()
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    try:
        daemon.start()
        yield daemon, standin
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
