"""Operations: reload, config, CURVE over TCP, backup, keys, maintenance commands, logs."""

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
import zmq.auth

from conftest import free_port, wait_terminal
from ctxkeep.clients import Client, CtxkeepError
from ctxkeep.protocol.events import ResponseGeneration

REPO = Path(__file__).resolve().parents[2]


def test_sighup_reloads_live_keys_and_reports_the_rest(daemon_factory, standin):
    d = daemon_factory()
    d.write_config("num_ctx = 4096\n")
    d.start()
    with d.client() as c:
        assert c.create_session().session.num_ctx == 4096
        d.write_config('num_ctx = 2048\ncompaction_tail_turns = 2\nollama_host = "http://127.0.0.1:1"\n')
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "configuration reloaded" not in d.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.create_session().session.num_ctx == 2048
        assert c.status().status.ollama.host == standin.url  # needs a restart: unchanged
    log = d.log.read_text()
    assert "applied num_ctx, compaction_tail_turns" in log
    assert "needs a restart to apply: ollama_host" in log


def test_sighup_with_a_broken_file_keeps_running(daemon_factory):
    d = daemon_factory()
    d.start()
    d.write_config("num_ctx = [\n")
    d.proc.send_signal(signal.SIGHUP)
    with d.client() as c:
        deadline = time.monotonic() + 10
        while "reload failed" not in d.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.ping() and c.create_session().session.num_ctx == 8192
    assert "not valid TOML" in d.log.read_text()


def test_config_show_says_where_each_value_comes_from(daemon_factory):
    d = daemon_factory()
    d.write_config('default_model = "qwen2.5:7b"\n')
    result = d.cli_process("config", "show")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert f'default_model = "qwen2.5:7b"  # {d.config_file}' in lines
    assert "num_ctx = 8192  # default" in lines
    assert f'ollama_host = "{d.env["OLLAMA_HOST"]}"  # environment (OLLAMA_HOST)' in lines
    d.write_config("num_ctxx = 1\n")
    bad = d.cli_process("config", "show")
    assert bad.returncode == 2 and "unknown key `num_ctxx`; did you mean `num_ctx`?" in bad.stderr


def test_config_md_matches_the_code():
    from ctxkeep.daemon.config.doc import render_markdown
    assert (REPO / "docs" / "config.md").read_text() == render_markdown(), \
        "docs/config.md is stale: ctxkeepd config doc > docs/config.md"


@pytest.fixture
def tcp_daemon(daemon_factory, short_tmp):
    d = daemon_factory()
    ctl, events = free_port(), free_port()
    d.write_config(f'tcp_control = "tcp://127.0.0.1:{ctl}"\ntcp_events = "tcp://127.0.0.1:{events}"\n')
    d.tcp = (f"tcp://127.0.0.1:{ctl}", f"tcp://127.0.0.1:{events}")
    return d


def remote_client(d, keys_dir: Path, timeout: float = 5.0) -> Client:
    """A client with its own key pair in `keys_dir`, as on another machine."""
    os.environ["XDG_CONFIG_HOME"] = str(keys_dir)
    server_public = (Path(d.env["XDG_CONFIG_HOME"]) / "ctxkeep" / "curve" / "server.key")
    os.environ["CTXKEEP_SERVER_KEY"] = zmq.auth.load_certificate(str(server_public))[0].decode()
    return Client(*d.tcp, timeout=timeout)


@pytest.fixture
def remote_env():
    saved = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "CTXKEEP_SERVER_KEY")}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def client_public(keys_dir: Path) -> str:
    from ctxkeep.clients.curve_keys import client_pair
    return client_pair(keys_dir / "ctxkeep" / "curve")[0].decode()


def test_tcp_without_keys_refuses_to_start(tcp_daemon):
    tcp_daemon.start(wait=False)
    assert tcp_daemon.proc.wait(30) == 1
    assert "no client key is authorized" in tcp_daemon.log.read_text()
    assert "ctxkeep keys add" in tcp_daemon.log.read_text()


def test_curve_admits_listed_keys_only(tcp_daemon, short_tmp, remote_env, standin, tmp_path):
    alice, mallory = short_tmp / "alice", short_tmp / "mallory"
    added = tcp_daemon.cli_process("keys", "add", client_public(alice), "alice")
    assert added.returncode == 0, added.stderr
    listing = tcp_daemon.cli_process("keys")
    assert "server public key:" in listing.stdout and "alice" in listing.stdout
    secret = Path(tcp_daemon.env["XDG_CONFIG_HOME"]) / "ctxkeep" / "curve" / "server.key_secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    tcp_daemon.start()

    with remote_client(tcp_daemon, alice) as c:
        assert c.ping()
        c.subscribe("")
        s = c.create_session(model="qwen2.5:7b").session
        (tmp_path / "secret.txt").write_text("daemon-side file")
        acc = c.send(s.id, "read @secret.txt", cwd=str(tmp_path))
        assert acc.warnings == ["@secret.txt: this client may not read files on the daemon's machine"]
        end, _ = wait_terminal(c, acc.generation_id)
        assert isinstance(end, ResponseGeneration)
        assert "daemon-side file" not in standin.chats[-1].body["messages"][-1]["content"]

    client_public(mallory)
    with remote_client(tcp_daemon, mallory, timeout=2.0) as c:
        with pytest.raises(CtxkeepError) as err:
            c.ping()
        assert err.value.code == "daemon_unavailable"  # an unknown key gets nothing at all

    with tcp_daemon.client() as local:  # local ipc clients are unaffected
        assert local.ping()


def test_backup_while_running_and_restore(daemon_factory, short_tmp, standin):
    d = daemon_factory().start()
    with d.client() as c:
        c.subscribe("")
        s = c.create_session(name="precious", model="qwen2.5:7b").session
        acc = c.send(s.id, "keep me")
        wait_terminal(c, acc.generation_id)
        (short_tmp / "copy").mkdir(mode=0o755)  # an existing, readable folder
        result = d.cli_process("daemon", "backup", str(short_tmp / "copy"))
        assert result.returncode == 0, result.stderr
        assert "backed up to" in result.stdout
        assert stat.S_IMODE((short_tmp / "copy" / "data.mdb").stat().st_mode) == 0o600
        c.delete("precious")
    assert d.cli_process("daemon", "backup", str(short_tmp / "copy")).returncode == 1  # not empty
    d.stop()
    store = short_tmp / "data" / "ctxkeep" / "store"
    (store / "data.mdb").unlink()
    shutil.copy(short_tmp / "copy" / "data.mdb", store / "data.mdb")
    d.start()
    with d.client() as c:
        assert [m.content for m in c.history("precious").messages][0] == "keep me"


def test_a_key_that_begins_with_a_dash_is_a_key(daemon_factory):
    """Z85 keys may begin with '-' (about one in 85): `ctxkeep keys` takes it as a key."""
    d = daemon_factory()  # its folders only: keys need no running daemon
    key = "-kxtZbx(Nwg&PV@ri}cIe!vpWU?qw(6nKl2EZSc7"
    added = d.cli_process("keys", "add", key, "alice")
    assert added.returncode == 0 and f"authorized {key}" in added.stdout, added.stderr
    assert key in d.cli_process("keys").stdout
    assert d.cli_process("keys", "remove", key).stdout.strip() == "removed"


def test_maintenance_commands_say_what_is_missing(daemon_factory, tmp_path):
    """`ctxkeepd check` of a folder with no store, and a --config file that is not there:
    one line each, a usage exit code, no traceback."""
    d = daemon_factory()
    for args, said in ((["check", str(tmp_path / "none")], "no store at"),
                       (["--config", str(tmp_path / "none.toml"), "config", "show"],
                        "no configuration file")):
        result = subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main", *args],
                                env=d.env, capture_output=True, text=True, timeout=30)
        assert result.returncode == 2 and said in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    d.write_config("event_hwm = 5000\n")
    renamed = d.cli_process("config", "show")
    assert renamed.returncode == 2 and "it is now `event_buffer_bytes`" in renamed.stderr


def test_what_ctxkeepd_prints_reaches_a_pipe_whole(daemon_factory):
    """`ctxkeepd` ends its process at once (no interpreter teardown): what it printed is
    flushed first, even into a pipe, where output is held in a buffer (no PYTHONUNBUFFERED)."""
    d = daemon_factory()
    env = {k: v for k, v in d.env.items() if k != "PYTHONUNBUFFERED"}
    for program in ([sys.executable, "-m", "ctxkeep.daemon.main"], [str(Path(sys.executable).parent / "ctxkeepd")]):
        result = subprocess.run([*program, "config", "show"], env=env, capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        assert result.stdout.rstrip().endswith("# default") and "memory_budget" in result.stdout, result.stdout


def test_logs_written_to_a_file_carry_the_time(daemon_factory):
    """As install.sh starts it (output to a log file, no journald): each line has its time."""
    import re
    d = daemon_factory()
    d.start()
    d.stop()
    ready = [line for line in d.log.read_text().splitlines() if "ctxkeepd 0.1.0 ready" in line]
    assert ready and re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO ", ready[0]), ready


def test_a_busy_http_port_is_said_before_serving(daemon_factory):
    """The HTTP listeners are bound when the daemon opens (before the front door's modules
    are imported): a port another program holds stops ctxkeepd at once with what to do, and
    nothing of it is left behind (its socket files, its lock)."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        d = daemon_factory()
        d.write_config(f'http_listen = "127.0.0.1:{port}"\n')
        d.start(wait=False)
        assert d.proc.wait(30) == 1
    said = d.log.read_text()
    assert f"cannot serve HTTP on 127.0.0.1:{port}: Address already in use: free the port or change " \
           "http_listen in config.toml" in said, said
    assert "Traceback" not in said
    left = {p.name for p in (d.root / "run" / "ctxkeep").iterdir()}
    assert not left & {"ctl", "events", "http.sock"}, left
