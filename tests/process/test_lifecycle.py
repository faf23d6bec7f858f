"""Start-up, restart, shutdown and the single-instance rule."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import wait_for, wait_terminal
from ctxkeep.clients import Client, DaemonUnavailable
from ctxkeep.protocol.events import DaemonStatusEvent, GenerationError, GenerationToken, ResponseGeneration


def test_restart_keeps_sessions_and_history(daemon_factory, standin):
    d = daemon_factory().start()
    with d.client() as c:
        c.subscribe("")
        s = c.create_session(name="keep", model="qwen2.5:7b").session
        acc = c.send(s.id, "remember this")
        end, _ = wait_terminal(c, acc.generation_id)
    assert d.stop() == 0
    d.start()
    with d.client() as c:
        c.subscribe("")
        again = c.session("keep").session
        assert again.id == s.id and again.message_count == 2
        assert again.token_count == end.token_count
        assert [m.content for m in c.history(s.id).messages] == ["remember this", end.message.content]
        acc = c.send(s.id, "and now?")
        wait_terminal(c, acc.generation_id)
    assert [m["content"] for m in standin.chats[-1].body["messages"]] == [
        "remember this", end.message.content, "and now?"]


def test_second_daemon_refuses_and_names_the_first(daemon):
    result = subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main"], env=daemon.env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"already running (pid {daemon.proc.pid})" in result.stderr
    with daemon.client() as c:  # the first one still owns its sockets
        assert c.ping()


def test_stale_sockets_from_a_crash_are_cleaned_up(daemon_factory):
    d = daemon_factory().start()
    d.stop(signal.SIGKILL)
    ctl = d.root / "run" / "ctxkeep" / "ctl"
    assert ctl.exists()  # left behind by the crash
    d.start()
    with d.client() as c:
        assert c.ping()


def test_socket_folder_is_private(daemon):
    folder = daemon.root / "run" / "ctxkeep"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"


def test_sigterm_lets_a_running_generation_finish(daemon_process, standin):
    daemon = daemon_process  # a process of its own: it is killed or signalled
    standin.chunk_delay = 0.01
    standin.script(" ".join(f"t{i}" for i in range(60)))
    with daemon.client() as c:
        c.subscribe("")
        s = c.create_session(model="qwen2.5:7b").session
        acc = c.send(s.id, "go")
        wait_for(c, GenerationToken)
        daemon.proc.send_signal(signal.SIGTERM)
        end, _ = wait_terminal(c, acc.generation_id)
        assert isinstance(end, ResponseGeneration)
        while True:
            item = c.next_event(timeout=10)
            assert item is not None
            if isinstance(item[1], DaemonStatusEvent) and item[1].stopping:
                break
    assert daemon.proc.wait(30) == 0
    daemon.start()
    with daemon.client() as c:
        assert [m.status for m in c.history(s.id).messages] == ["complete", "complete"]


def test_sigterm_past_the_drain_timeout_cancels_cleanly(daemon_factory, standin):
    d = daemon_factory()
    d.write_config("drain_timeout = 0.2\n")
    d.start()
    standin.chunk_delay = 0.05
    standin.script(" ".join(f"t{i}" for i in range(500)))
    with d.client() as c:
        c.subscribe("")
        s = c.create_session(model="qwen2.5:7b").session
        acc = c.send(s.id, "go")
        wait_for(c, GenerationToken)
        d.proc.send_signal(signal.SIGTERM)
        end, _ = wait_terminal(c, acc.generation_id)
        assert isinstance(end, GenerationError) and end.code == "shutting_down"
    assert d.proc.wait(30) == 0
    d.start()
    with d.client() as c:
        history = c.history(s.id).messages
        assert [m.status for m in history] == ["complete", "interrupted"]
        assert history[1].content == end.partial


def test_config_error_names_the_key(daemon_factory):
    d = daemon_factory()
    d.write_config('num_ctxx = 4096\n')
    d.start(wait=False)
    assert d.proc.wait(30) == 2
    log = d.log.read_text()
    assert "unknown key `num_ctxx`" in log and "did you mean `num_ctx`" in log


def test_config_wrong_type_names_the_key(daemon_factory):
    d = daemon_factory()
    d.write_config('num_ctx = "large"\n')
    d.start(wait=False)
    assert d.proc.wait(30) == 2
    assert "`num_ctx`" in d.log.read_text()


def test_config_sets_defaults_of_new_sessions(daemon_factory):
    d = daemon_factory()
    d.write_config('default_model = "small:1b"\nnum_ctx = 2048\n')
    d.start()
    with d.client() as c:
        s = c.create_session().session
        assert (s.model, s.num_ctx) == ("small:1b", 2048)


def test_socket_path_too_long_is_explained(daemon_factory, short_tmp):
    d = daemon_factory()
    d.env["XDG_RUNTIME_DIR"] = str(short_tmp / ("x" * 120))
    d.start(wait=False)
    assert d.proc.wait(30) == 1
    assert "over the limit of 107" in d.log.read_text()


def test_unwritable_store_is_reported(daemon_factory, short_tmp):
    d = daemon_factory()
    blocker = short_tmp / "blocker"
    blocker.write_text("a file where the data folder should be")
    d.env["XDG_DATA_HOME"] = str(blocker)
    d.start(wait=False)
    assert d.proc.wait(30) == 1
    assert "ERROR" in d.log.read_text() and "blocker" in d.log.read_text()


def test_ipc_endpoint_env_override(daemon_factory, short_tmp):
    d = daemon_factory()
    d.env["CTXKEEP_CONTROL"] = f"ipc://{short_tmp}/c"
    d.env["CTXKEEP_EVENTS"] = f"ipc://{short_tmp}/e"
    d.start(wait=False)
    deadline = time.monotonic() + 20
    while not (short_tmp / "c").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with Client(f"ipc://{short_tmp}/c", f"ipc://{short_tmp}/e") as c:
        assert c.ping()
        assert c.status().status.control_endpoint == f"ipc://{short_tmp}/c"
    assert os.path.exists(short_tmp / "e")


def test_client_turn_ends_when_the_daemon_is_killed(daemon_process, standin):
    """`Client.turn` waiting on an answer whose daemon dies (no terminal event ever comes)
    raises DaemonUnavailable instead of waiting forever."""
    standin.fail_next("delay", seconds=30)
    with daemon_process.client() as c:
        sid = c.create_session(model="qwen2.5:7b").session.id
        killer = threading.Timer(0.5, lambda: daemon_process.proc.send_signal(signal.SIGKILL))
        killer.start()
        try:
            with pytest.raises(DaemonUnavailable):
                c.turn(sid, "hi")
        finally:
            killer.join()


def test_daemon_start_stop_and_restart_without_systemd(daemon_factory):
    """`ctxkeep daemon start|restart|stop` where no systemd runs the service: in the
    background, its log where ./install.sh writes it, and a clean stop."""
    d = daemon_factory()
    d.write_config("")
    d.env["XDG_STATE_HOME"] = str(d.root / "state")
    try:
        started = d.cli_process("daemon", "start")
        assert started.returncode == 0 and "is running (pid" in started.stdout, started.stdout + started.stderr
        first = d.client().status().status.pid
        assert "already running" in d.cli_process("daemon", "start").stdout
        again = d.cli_process("daemon", "restart")
        assert again.returncode == 0 and f"stopped ctxkeepd (pid {first})" in again.stdout, again.stdout
        second = d.client().status().status.pid
        assert second != first and (d.root / "state" / "ctxkeep" / "ctxkeepd.log").exists()
        stopped = d.cli_process("daemon", "stop")
        assert stopped.returncode == 0 and f"stopped ctxkeepd (pid {second})" in stopped.stdout
        assert d.cli_process("daemon", "stop").stdout.strip() == "ctxkeepd is not running"
    finally:
        d.cli_process("daemon", "stop")
