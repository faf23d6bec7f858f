"""Reliability guarantees through the daemon's process: no frame can silence it, start-up
faults are one clear line, and a client never waits on a daemon that is gone."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import fuzzframes
from conftest import raw_request, raw_socket, wait_for
from ctxkeep.protocol.events import GenerationToken

MODEL = "qwen2.5:7b"


def test_fuzzed_frames_never_silence_the_daemon(daemon_process):
    """Random frames (raw bytes, requests over the real schema with random fields, deep
    nesting): every one gets an answer, the daemon keeps serving, its memory stays put."""
    daemon = daemon_process  # a process of its own: its memory is measured
    sock = raw_socket(daemon)
    try:
        raw_request(sock, b'{"type": "ping", "id": "warm"}')
        # one-time set-up first (the model client and its HTTP pool, on the first request
        # that asks Ollama): what is measured is growth, not initialisation
        raw_request(sock, b'{"type": "session.create", "id": "warm", "model": "qwen2.5:7b", "options": {"top_k": 1}}')
        raw_request(sock, b'{"type": "models.list", "id": "warm"}')
        before = rss_kib(daemon.proc.pid)
        fuzzframes.run(lambda frame: fuzzframes.check_reply(raw_request(sock, frame)), examples=300)
        assert raw_request(sock, b'{"type": "ping", "id": "after"}')["type"] == "pong"
        assert daemon.proc.poll() is None
        assert rss_kib(daemon.proc.pid) - before < 20 * 1024
    finally:
        sock.close()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def ask_while_streaming(daemon, standin) -> tuple[str, subprocess.Popen]:
    """`ctxkeep ask` in its own process, returned once its answer is streaming."""
    standin.chunk_delay = 0.2
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "ctxkeep.clients.cli.main", "ask", sid, "go on"],
                            env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with daemon.client() as c:
        c.subscribe("generation.token")
        wait_for(c, GenerationToken)
    return sid, proc


def test_ask_stops_waiting_when_the_daemon_dies(daemon_process, standin):
    daemon = daemon_process  # a process of its own: it is killed or signalled
    _, proc = ask_while_streaming(daemon, standin)
    daemon.stop(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "ctxkeepd is not running" in err
    assert "Your message was accepted and is stored" in err  # never reported as lost


@pytest.mark.early
def test_a_busy_daemon_is_not_reported_as_dead(daemon_process, standin):
    """A daemon that stops answering for a while (SIGSTOP: as an overloaded machine can
    hold it) is running, and said to be so; an `ask` under way waits it out and prints
    its answer (it exited with "not running" after 2 s before)."""
    daemon = daemon_process
    status = daemon.cli_process("status", "--timeout", "30")  # it answers (on a loaded machine,
    assert status.returncode == 0, status.stderr  # its first answer took over 1 s)
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        status = daemon.cli_process("status", "--timeout", "1", timeout=120)
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    assert status.returncode == 1 and f"ctxkeepd (pid {daemon.proc.pid}) is running but did not " \
        "answer" in status.stderr and "not running" not in status.stderr, status.stderr
    sid, proc = ask_while_streaming(daemon, standin)
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    time.sleep(3)  # longer than the client waited before calling it dead (2 s)
    os.kill(daemon.proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "You said" in out, (out, err)


def test_ask_says_so_when_the_daemon_restarted(daemon_process, standin):
    daemon = daemon_process  # a process of its own: it is killed or signalled
    sid, proc = ask_while_streaming(daemon, standin)
    proc.send_signal(signal.SIGSTOP)  # `ask` held while the daemon restarts: on a loaded machine a
    daemon.stop(signal.SIGKILL)  # slow start was seen first as "not running" (the test above)
    daemon.start()
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "restarted" in err, (out, err)
    with daemon.client() as c:  # the cut answer was marked at start-up
        (answer,) = [m for m in c.history(sid).messages if m.role == "assistant"]
        assert answer.status == "interrupted" and answer.error == "daemon_restarted"


def start_failure(daemon) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main"], env=daemon.env,
                          capture_output=True, text=True, timeout=30)


def test_a_second_daemon_on_the_same_store_refuses_to_start(daemon_factory, short_tmp):
    first = daemon_factory().start()
    second = dict(first.env, XDG_RUNTIME_DIR=str(short_tmp / "run2"))
    (short_tmp / "run2").mkdir()
    result = subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main"], env=second,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "already running" in result.stderr and "store" in result.stderr


def test_an_unusable_store_folder_is_one_clear_line(daemon_factory):
    d = daemon_factory()
    d.write_config('store_path = "/proc/ctxkeep-store"\n')  # not creatable, even by root
    result = start_failure(d)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot create the store folder /proc/ctxkeep-store" in result.stderr


def test_a_read_only_store_folder_is_one_clear_line(daemon_factory, short_tmp):
    d = daemon_factory()
    store = short_tmp / "data" / "ctxkeep" / "store"
    store.mkdir(parents=True)
    store.chmod(0o500)  # read-only
    try:
        if os.access(store, os.W_OK):
            pytest.skip("running as a user that can write anyway (root)")
        result = start_failure(d)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert "not writable" in result.stderr
    finally:
        store.chmod(0o700)


def test_a_tcp_port_in_use_is_one_line_and_leaves_no_sockets(daemon_factory, short_tmp):
    from ctxkeep.clients.curve_keys import client_pair
    d = daemon_factory()
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    key = client_pair(short_tmp / "alice" / "ctxkeep" / "curve")[0].decode()
    assert d.cli_process("keys", "add", key, "alice").returncode == 0  # so only the port is wrong
    d.write_config(f'tcp_control = "tcp://127.0.0.1:{port}"\n')
    result = start_failure(d)
    busy.close()
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "cannot listen on" in result.stderr and "Address already in use" in result.stderr
    assert not (short_tmp / "run" / "ctxkeep" / "ctl").exists()
