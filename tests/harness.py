"""The real daemon as a subprocess on its own XDG folders: for tests and benchmarks."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxkeep.clients import Client, CtxkeepError

#: The default model of test daemons: one the stand-in has.
TEST_MODEL = "qwen2.5:7b"


def run_cli_in_process(argv: list[str], env: dict[str, str], stdin: str,
                       cwd: Path | None) -> subprocess.CompletedProcess[str]:
    """`ctxkeep ARGV` through `main(argv)`: its exit status and what it printed."""
    from ctxkeep.clients.cli.main import main
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _stdin(io.StringIO(stdin)):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: --help, usage errors
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["ctxkeep", *argv], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(stream: io.StringIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


class DaemonProcess:
    """ctxkeepd in its own process, with its own runtime, data and config folders."""

    def __init__(self, root: Path, ollama_url: str, log_level: str = "debug") -> None:
        self.root = root
        self.log_level = log_level
        self.env = dict(os.environ,
                        XDG_RUNTIME_DIR=str(root / "run"), XDG_DATA_HOME=str(root / "data"),
                        XDG_CONFIG_HOME=str(root / "config"), OLLAMA_HOST=ollama_url)
        for key in ("CTXKEEP_CONTROL", "CTXKEEP_EVENTS"):
            self.env.pop(key, None)
        (root / "run").mkdir(exist_ok=True)
        self.proc: subprocess.Popen[str] | None = None
        self.log = root / "ctxkeepd.log"

    @property
    def control(self) -> str:
        return f"ipc://{self.root}/run/ctxkeep/ctl"

    @property
    def events(self) -> str:
        return f"ipc://{self.root}/run/ctxkeep/events"

    @property
    def config_file(self) -> Path:
        return self.root / "config" / "ctxkeep" / "config.toml"

    def write_config(self, text: str) -> None:
        """config.toml with `text`; the default model is one the stand-in has, unless
        `text` names another."""
        if "default_model" not in text:
            text = f'default_model = "{TEST_MODEL}"\n' + text
        if "embed_builtin" not in text:  # the built-in embedder only where a test asks for it
            text = "embed_builtin = false\n" + text
        self.config_file.parent.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(text)

    def start(self, wait: bool = True) -> "DaemonProcess":
        if not self.config_file.exists():
            self.write_config("")
        log = self.log.open("a")
        self.proc = subprocess.Popen([sys.executable, "-m", "ctxkeep.daemon.main", "--log-level", self.log_level],
                                     env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"ctxkeepd exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                with self.client(timeout=0.5) as c:
                    c.ping()
                return
            except CtxkeepError:
                time.sleep(0.05)
        raise RuntimeError(f"ctxkeepd did not come up:\n{self.log.read_text()}")

    def client(self, timeout: float = 10.0) -> Client:
        return Client(self.control, self.events, timeout=timeout)

    def log_errors(self) -> list[str]:
        """The log's lines at ERROR or CRITICAL and its tracebacks, each with what follows."""
        lines = self.log.read_text().splitlines()
        return ["\n".join(lines[max(0, n - 2):n + 60]) for n, line in enumerate(lines)
                if line.startswith(("ERROR", "CRITICAL")) or "Traceback" in line]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def cli(self, *args: str, input: str | None = None, timeout: float = 60.0,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run the `ctxkeep` CLI against this daemon: `main(argv)` in this process, with this
        daemon's environment, `input` as stdin and stdout/stderr captured (`timeout` is the
        clients' own: every wait they make has a deadline)."""
        return run_cli_in_process(list(args), self.env, input or "", cwd)

    def cli_process(self, *args: str, input: str | None = None, timeout: float = 60.0,
                    cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run the `ctxkeep` CLI as a program of its own (for signals and start-up)."""
        return subprocess.run([sys.executable, "-m", "ctxkeep.clients.cli.main", *args],
                              env=self.env, input=input, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)


class DaemonThread:
    """The real daemon (sockets, store, handlers, jobs) served from a thread of this process:
    for the tests that need no process of its own (no signals, restarts or log file), so
    that they start in milliseconds. Same endpoints and environment as a DaemonProcess."""

    def __init__(self, root: Path, ollama_url: str, **settings: Any) -> None:
        self._twin = DaemonProcess(root, ollama_url)  # its folders, endpoints and environment
        self.settings = settings  # more configuration (e.g. http_listen)
        self.root, self.env = root, self._twin.env
        self.ollama_url = ollama_url
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._daemon: Any = None
        self._failure: BaseException | None = None

    control = property(lambda self: self._twin.control)
    events = property(lambda self: self._twin.events)
    config_file = property(lambda self: self._twin.config_file)

    @property
    def http_socket(self) -> Path:
        """The HTTP front door's Unix socket."""
        from ctxkeep.protocol.paths import http_socket
        return http_socket(self.control)

    @property
    def http(self) -> Any:
        """Where the daemon's HTTP front door listens (its URL, address and token)."""
        return self._daemon.http

    def start(self) -> "DaemonThread":
        # the daemon imports its model clients lazily, on its own thread; a test importing
        # the same packages (openai, pydantic) at that moment races it to a half-initialized
        # module, so they are imported here first, as the daemon's own process is alone
        import ollama  # noqa: F401
        import openai  # noqa: F401

        from ctxkeep.daemon.config import Config
        from ctxkeep.daemon.server.daemon import Daemon
        settings = {"default_model": TEST_MODEL, "embed_builtin": False, **self.settings}
        config = Config(control_endpoint=self.control, events_endpoint=self.events,
                        store_path=str(self.root / "data" / "ctxkeep" / "store"),
                        ollama_host=self.ollama_url, drain_timeout=0.0, **settings)
        self._daemon = Daemon(config, self.config_file)  # `models.default` writes there
        opened = threading.Event()

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                self._daemon.open()
                opened.set()
                loop.run_until_complete(self._daemon.serve(signals=False))
            except BaseException as exc:  # reported by start()/stop()
                self._failure = exc
                opened.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="ctxkeepd", daemon=True)
        self._thread.start()
        opened.wait(30)
        if self._failure is not None:
            raise RuntimeError(f"ctxkeepd did not open: {self._failure!r}")
        self.proc = types.SimpleNamespace(pid=os.getpid())  # the daemon's pid: this process's
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with self.client(timeout=0.5) as c:
                    c.ping()
                return self
            except CtxkeepError:
                time.sleep(0.01)
        raise RuntimeError("ctxkeepd (in a thread) did not come up")

    def client(self, timeout: float = 10.0) -> Client:
        return Client(self.control, self.events, timeout=timeout)

    def cli(self, *args: str, input: str | None = None, timeout: float = 60.0,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli_in_process(list(args), self.env, input or "", cwd)

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._daemon.stop)
            self._thread.join(30)
            if self._thread.is_alive():
                raise RuntimeError(f"ctxkeepd (in a thread) did not stop in 30 s:\n{_stuck(self._thread, self._loop)}")
        self._thread = None
        if self._failure is not None:
            raise RuntimeError(f"ctxkeepd (in a thread) failed: {self._failure!r}")


def _stuck(thread: threading.Thread, loop: asyncio.AbstractEventLoop) -> str:
    """Where a thread that would not stop is, and its event loop's tasks."""
    frame = sys._current_frames().get(thread.ident or 0)
    where = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"
    tasks = "\n".join(repr(t) for t in asyncio.all_tasks(loop))
    return f"{where}\ntasks:\n{tasks}"
