"""ctxkeepd under systemd: its units (verified, installed, uninstalled), readiness and the
watchdog, socket activation (the first client starts it), journald's priorities."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import ollama
import pytest

from conftest import wait_terminal
from ctxkeep.clients import Client
from ctxkeep.daemon.server import systemd
from ctxkeep.protocol.events import ResponseGeneration
from ctxkeep.protocol.http_token import read_or_make


def needs(tool: str) -> None:
    """CI installs these tools (.ci/run); elsewhere a missing one skips the test."""
    if shutil.which(tool) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing: .ci/run should install it")
        pytest.skip(f"{tool} is not installed")


def test_installed_units_pass_systemd_analyze_verify(daemon_factory, short_tmp):
    needs("systemd-analyze")
    d = daemon_factory()
    result = d.cli("daemon", "install", "--http", "127.0.0.1:11999")
    assert result.returncode == 0, result.stderr
    folder = Path(d.env["XDG_CONFIG_HOME"]) / "systemd" / "user"
    units = sorted(str(p) for p in folder.iterdir())
    assert [Path(u).name for u in units] == ["ctxkeep-ctl.socket", "ctxkeep-events.socket",
                                              "ctxkeep-http.socket", "ctxkeep.service"]
    service = (folder / "ctxkeep.service").read_text()
    assert f"ExecStart={Path(sys.executable).parent / 'ctxkeepd'}" in service
    # the daemon writes its store, and the HTTP token in the config folder
    config = Path(d.env["XDG_CONFIG_HOME"]) / "ctxkeep"
    assert f"ReadWritePaths={short_tmp}/data/ctxkeep {config}" in service
    assert "ListenStream=127.0.0.1:11999" in (folder / "ctxkeep-http.socket").read_text()
    token = config / "http-token"  # made now: the client that starts the daemon sends it
    assert token.stat().st_mode & 0o777 == 0o600 and len(token.read_text().strip()) >= 32
    assert "Type=notify" in service and "WatchdogSec=" in service
    # System-mode verification: user mode needs a running user manager, which CI lacks.
    check = subprocess.run(["systemd-analyze", "verify", *units], capture_output=True, text=True)
    assert check.returncode == 0 and not check.stderr.strip(), check.stderr


def test_install_without_systemd_prints_what_to_run(daemon_factory):
    d = daemon_factory()
    d.env["PATH"] = f"{Path(sys.executable).parent}:/nonexistent"
    result = d.cli("daemon", "install")
    assert result.returncode == 0
    assert "  systemctl --user daemon-reload\n" in result.stdout
    assert ("  systemctl --user enable --now ctxkeep-ctl.socket ctxkeep-events.socket "
            "ctxkeep.service\n") in result.stdout
    bad = d.cli("daemon", "install", "--http", "11435")
    assert bad.returncode != 0 and "HOST:PORT" in bad.stderr


def test_install_and_uninstall_drive_systemctl(daemon_factory, short_tmp):
    d = daemon_factory()
    fake = short_tmp / "bin"
    fake.mkdir()
    log = short_tmp / "systemctl.log"
    (fake / "systemctl").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexit 0\n')
    (fake / "systemctl").chmod(0o755)
    d.env["PATH"] = f"{fake}:{d.env['PATH']}"
    assert d.cli("daemon", "install", "--http", "127.0.0.1:11435").returncode == 0
    calls = log.read_text().splitlines()
    assert calls == ["--user show-environment", "--user daemon-reload",
                     "--user enable --now ctxkeep-ctl.socket ctxkeep-events.socket ctxkeep.service "
                     "ctxkeep-http.socket"]
    log.unlink()
    assert d.cli("daemon", "uninstall").returncode == 0
    assert log.read_text().splitlines() == [
        "--user show-environment",
        "--user disable --now ctxkeep-ctl.socket ctxkeep-events.socket ctxkeep.service "
        "ctxkeep-http.socket",
        "--user daemon-reload"]
    assert not list((Path(d.env["XDG_CONFIG_HOME"]) / "systemd" / "user").iterdir())


def test_daemon_status_shows_both_views(daemon):
    result = daemon.cli("daemon", "status")
    assert result.returncode == 0
    assert "ctxkeepd 0.1.0" in result.stdout and "systemd:" in result.stdout


def test_notify_ready_watchdog_stopping_in_order(daemon_factory, short_tmp):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(short_tmp / "notify"))
    listener.settimeout(20)
    d = daemon_factory()
    d.env.update(NOTIFY_SOCKET=str(short_tmp / "notify"), WATCHDOG_USEC="200000")
    d.start()
    messages = []
    while sum("WATCHDOG=1" in m for m in messages) < 3:
        messages.append(listener.recv(4096).decode())
    d.proc.send_signal(signal.SIGTERM)
    while not any("STOPPING=1" in m for m in messages):
        messages.append(listener.recv(4096).decode())
    assert d.proc.wait(30) == 0
    listener.close()
    lines = [line for m in messages for line in m.splitlines()]
    ready = lines.index("READY=1")
    watchdog = lines.index("WATCHDOG=1")
    stopping = lines.index("STOPPING=1")
    assert ready < watchdog < stopping
    assert any(line.startswith("STATUS=") for line in lines)


def test_watchdog_interval_is_half_the_period():
    assert systemd.watchdog_interval({"WATCHDOG_USEC": "30000000"}) == 15.0
    assert systemd.watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}) is None
    assert systemd.watchdog_interval({}) is None
    assert systemd.notify("READY=1", env={}) is False


@contextmanager
def socket_activated(d, *tcp: str) -> Iterator[Path]:
    """ctxkeepd behind systemd-socket-activate, which holds its control and event sockets
    (and `tcp`'s addresses, named `http`) and starts it on the first connection; yields
    its runtime folder once the sockets exist."""
    needs("systemd-socket-activate")
    run = Path(d.env["XDG_RUNTIME_DIR"]) / "ctxkeep"
    run.mkdir(mode=0o700)
    keep = ("XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "OLLAMA_HOST", "PATH", "HOME")
    listen = [str(run / "ctl"), str(run / "events"), *tcp]
    command = ["systemd-socket-activate", *(f"-l{where}" for where in listen),
               "--fdname=" + ":".join(["ctl", "events"] + ["http"] * len(tcp)),
               *(f"-E{k}={d.env[k]}" for k in keep if k in d.env),
               sys.executable, "-m", "ctxkeep.daemon.main", "--log-level", "debug"]
    proc = subprocess.Popen(command, env=d.env, stdout=d.log.open("a"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not (run / "events").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield run
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_socket_activation_adopts_systemds_sockets(daemon_factory, short_tmp, standin):
    d = daemon_factory()
    with socket_activated(d), Client(d.control, d.events, timeout=15) as c:  # the first connection starts it
        c.subscribe("")
        s = c.create_session(model="qwen2.5:7b").session
        acc = c.send(s.id, "hello through adopted sockets")
        end, _ = wait_terminal(c, acc.generation_id)
        assert isinstance(end, ResponseGeneration)
        assert "adopted sockets from systemd: ctl, events" in d.log.read_text()


def test_the_first_http_client_starts_a_socket_activated_daemon(daemon_factory, short_tmp, standin):
    """ctxkeep-http.socket: systemd holds the TCP port; an Ollama client's request starts
    ctxkeepd, which serves it on that socket, with the token `install --http` made."""
    d = daemon_factory()
    token = read_or_make(Path(d.env["XDG_CONFIG_HOME"]) / "ctxkeep" / "http-token")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with socket_activated(d, f"127.0.0.1:{port}"):
        client = ollama.Client(host=f"http://127.0.0.1:{port}", timeout=30,
                               headers={"Authorization": f"Bearer {token}"})
        answer = client.chat(model="qwen2.5:7b", messages=[{"role": "user", "content": "Wake up"}])
        assert answer.done and answer.prompt_eval_count > 0
        assert "adopted sockets from systemd: ctl, events, http" in d.log.read_text()
        with Client(d.control, d.events, timeout=15) as c:
            status = c.status().status
            assert status.http_url == f"http://127.0.0.1:{port}" and status.http_auth == "token"


def test_logs_carry_journald_priorities_under_systemd(daemon_factory):
    d = daemon_factory()
    d.env["JOURNAL_STREAM"] = "8:12345"
    d.start()
    d.stop()
    lines = d.log.read_text().splitlines()
    assert any(line.startswith("<6>INFO ctxkeep.daemon.server.daemon: ctxkeepd 0.1.0 ready") for line in lines)
    assert "\x1b[" not in d.log.read_text()
