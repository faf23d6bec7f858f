"""Reliability guarantees through the real daemon: no request can silence it or stall
other clients, bad input gets the right code, start-up faults are one clear line, and a
client never waits on a daemon that is gone."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
import fuzzframes

from ctxkeep.clients import CtxkeepError
from ctxkeep.protocol.events import GenerationToken, SessionCreated
from conftest import until_idle, wait_for

MODEL = "qwen2.5:7b"


def raw_socket(daemon) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(daemon.control)
    return sock


def ask(sock: zmq.Socket, payload: bytes, timeout_ms: int = 5000) -> dict:
    sock.send(payload)
    assert sock.poll(timeout_ms), "no reply"
    return json.loads(sock.recv())


def test_a_slow_request_does_not_stall_other_clients(daemon, standin, client):
    """A dry-run compaction waits on a slow /api/show; another client's ping is answered
    meanwhile (the slow reply is still outstanding when the ping's arrives)."""
    s = client.create_session(model="thinker:8b", force=True).session  # /api/show not asked yet
    standin.fail_next("delay", seconds=3.0, path="/api/show")
    slow = raw_socket(daemon)
    slow.send(json.dumps({"type": "compact", "id": "slow", "session": s.id, "dry_run": True}).encode())
    deadline = time.monotonic() + 10
    while "/api/show" not in standin.posts:  # the slow request is waiting on Ollama
        assert time.monotonic() < deadline, "the dry run never asked /api/show"
        time.sleep(0.01)
    fast = raw_socket(daemon)
    assert ask(fast, b'{"type": "ping", "id": "p"}')["type"] == "pong"
    assert not slow.poll(0), "the slow request should still be waiting on Ollama"
    assert json.loads(slow.recv() if slow.poll(10000) else b"{}").get("id") == "slow"
    slow.close()
    fast.close()


def test_bad_ids_and_names_get_invalid_argument(client):
    s = client.create_session(model=MODEL).session
    for bad in ("-1", "f" * 40, "not hex", "0x10"):
        with pytest.raises(CtxkeepError) as err:
            client.restore(s.id, bad)
        assert err.value.code == "invalid_argument" and "snapshot" in err.value.message
        with pytest.raises(CtxkeepError) as err:
            client.delete_snapshot(s.id, bad)
        assert err.value.code == "invalid_argument"
    with pytest.raises(CtxkeepError) as err:
        client.create_session(model=MODEL, name="😀" * 200)
    assert err.value.code == "invalid_argument" and "bytes" in err.value.message
    with pytest.raises(CtxkeepError) as err:
        client.rename(s.id, "😀" * 100)
    assert err.value.code == "invalid_argument"
    assert client.ping()


def test_a_file_name_that_is_not_utf8_is_listed(client, tmp_path):
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "fine.txt").write_text("x")
    os.close(os.open(os.fsencode(folder) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o600))
    s = client.create_session(model=MODEL).session
    acc = client.send(s.id, "what is in @odd/", cwd=str(tmp_path))
    until_idle(client, s.id, acc.generation_id)
    (question,) = [m for m in client.history(s.id).messages if m.role == "user"]
    assert question.files[0].mode == "listing" and not question.files[0].error


def test_fuzzed_frames_never_silence_the_daemon(daemon_process):
    """Random frames (raw bytes, requests over the real schema with random fields, deep
    nesting): every one gets an answer, the daemon keeps serving, its memory stays put."""
    daemon = daemon_process  # a process of its own: its memory is measured
    sock = raw_socket(daemon)
    try:
        ask(sock, b'{"type": "ping", "id": "warm"}')
        # one-time set-up first (the model client and its HTTP pool, on the first request
        # that asks Ollama): what is measured is growth, not initialisation
        ask(sock, b'{"type": "session.create", "id": "warm", "model": "qwen2.5:7b", "options": {"top_k": 1}}')
        ask(sock, b'{"type": "models.list", "id": "warm"}')
        before = rss_kib(daemon.proc.pid)
        fuzzframes.run(lambda frame: fuzzframes.check_reply(ask(sock, frame)), examples=300)
        assert ask(sock, b'{"type": "ping", "id": "after"}')["type"] == "pong"
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


def test_a_busy_daemon_is_not_reported_as_dead(daemon_process, standin):
    """A daemon that stops answering for a while (SIGSTOP: as an overloaded machine can
    hold it) is running, and said to be so; an `ask` under way waits it out and prints
    its answer (it exited with "not running" after 2 s before)."""
    daemon = daemon_process
    status = daemon.cli_process("status", "--timeout", "1")
    assert status.returncode == 0
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
    daemon.stop(signal.SIGKILL)
    daemon.start()
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


def test_subscriptions_are_bounded_and_released(daemon_factory):
    """A prefix too long ends its connection unread (no greeting, nothing kept); past the
    limit per connection a subscription costs nothing and gets no greeting; at the shared
    limit the connection holding the most is closed to make room; what a subscriber held is
    released when it leaves."""
    from ctxkeep.daemon.transports.zmq.publisher import MAX_PREFIX_BYTES
    daemon = daemon_factory()
    daemon.write_config("max_subscriptions = 40\nmax_subscriptions_per_client = 30\n")
    daemon.start()
    ctx = zmq.Context.instance()
    long = ctx.socket(zmq.SUB)
    long.setsockopt(zmq.LINGER, 0)
    events = long.get_monitor_socket(zmq.EVENT_DISCONNECTED)
    long.connect(daemon.events)
    long.subscribe(b"daemon.status" + b"x" * MAX_PREFIX_BYTES)
    assert events.poll(20_000), "the connection of the long prefix was not closed"
    assert not long.poll(100)  # no greeting
    long.disable_monitor()
    events.close()
    long.close()
    deadline = time.monotonic() + 20
    hogs = []
    for name in "ab":
        hog = ctx.socket(zmq.SUB)
        hog.setsockopt(zmq.LINGER, 0)
        hog.connect(daemon.events)
        for i in range(35):
            hog.subscribe(f"daemon.status/{name}{i}".encode())
        hogs.append(hog)
        if name == "a":
            while "past the limit of 30 per connection" not in daemon.log.read_text():
                assert time.monotonic() < deadline, "the daemon did not refuse past 30"
                time.sleep(0.02)
            watcher = daemon.client(timeout=5)  # the hog cannot take the shared limit
            assert watcher.subscribe("").status.pid == daemon.proc.pid
    # at the shared limit the connection holding the most gives way: no program's many
    # connections can lock other clients out of events
    while "holding 30 subscriptions to make room for another client" not in daemon.log.read_text():
        assert time.monotonic() < deadline, "the largest holder was not closed at the shared limit"
        time.sleep(0.02)
    for _ in range(3):
        with daemon.client(timeout=5) as c:
            assert c.subscribe("").status.pid == daemon.proc.pid
    watcher.close()
    for hog in hogs:
        hog.close()  # leaving releases what it held
    while True:
        try:
            with daemon.client(timeout=1) as c:
                assert c.subscribe("").status.pid == daemon.proc.pid
                break
        except CtxkeepError:
            assert time.monotonic() < deadline, "subscriptions were not released"


def test_a_slow_subscriber_loses_the_newest_events_and_sees_the_gap(daemon_factory, standin):
    """A subscriber's queue is bounded in bytes (`event_buffer_bytes`, here its least,
    1 MiB ≈ 227 events): one that does not read while an answer streams 3,000 batches gets
    fewer events than were published, and the gap shows in `seq` at the next event."""
    from ctxkeep.protocol import decode_event
    standin.reply_fn = lambda messages: " ".join(f"w{i}" for i in range(3000))
    daemon = daemon_factory()
    daemon.write_config("event_buffer_bytes = 1048576\ntoken_batch_ms = 0\nnum_ctx = 32768\nanswer_max_share = 1.0\n")
    daemon.start()
    slow = zmq.Context.instance().socket(zmq.SUB)
    slow.setsockopt(zmq.LINGER, 0)
    slow.setsockopt(zmq.RCVHWM, 20)
    slow.setsockopt(zmq.RCVBUF, 4096)
    slow.connect(daemon.events)
    slow.subscribe(b"")
    assert slow.poll(10_000) and slow.recv_multipart()  # the greeting: the subscription is live
    with daemon.client() as c:
        c.subscribe("")
        sid = c.create_session(model=MODEL).session.id
        acc = c.send(sid, "stream a long answer")
        events = until_idle(c, sid, acc.generation_id)
    published = [e for e in events if isinstance(e, GenerationToken)]
    assert len(published) >= 2000
    seqs = []
    while slow.poll(500):
        seqs.append(decode_event(slow.recv_multipart()[1]).seq)
    assert len(seqs) < len(published)
    assert seqs == sorted(set(seqs))  # in order, none twice
    # the oldest are kept: the first queue's worth arrives whole (later ones may slip in
    # where the subscriber's own I/O thread made room meanwhile, on a busy machine)
    assert seqs[:200] == list(range(seqs[0], seqs[0] + 200))
    with daemon.client() as c:
        c.create_session(model=MODEL)
    assert slow.poll(10_000)
    event = decode_event(slow.recv_multipart()[1])
    assert isinstance(event, SessionCreated) and event.seq > seqs[-1] + 1


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _settled_rss(pid: int) -> float:
    """The daemon's resident size once it stops changing (its work on what was sent done)."""
    last, stable = _rss_mib(pid), 0
    for _ in range(100):
        time.sleep(0.1)
        now = _rss_mib(pid)
        stable = stable + 1 if abs(now - last) < 0.5 else 0
        if stable >= 5:
            break
        last = now
    return now


@pytest.mark.parametrize("size", [200, 40])
def test_a_hostile_subscriber_cannot_grow_the_daemon(daemon_factory, size):
    """20,000 subscriptions of `size` bytes, then ten of 1 MiB: the daemon's memory stays
    within 40 MiB of where it was, falls back once the subscriber is gone, and it serves
    on. (libzmq keeps a copy of every subscription a connection sends: prefixes over the
    limit now end their connection unread, and a connection refused too often is closed.)"""
    daemon = daemon_factory().start()
    pid = daemon.proc.pid
    with daemon.client() as c:  # warm: the model client imported, a subscriber greeted
        c.subscribe("")
    start = _settled_rss(pid)
    hostile = subprocess.Popen([sys.executable, str(Path(__file__).parents[1] / "hostile_subscriber.py"),
                                daemon.events, "--size", str(size)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    peaks = []
    for phase in ("small sent", "huge sent"):
        assert hostile.stdout.readline().strip() == phase
        peaks.append(_settled_rss(pid) - start)
        hostile.stdin.write("\n")
        hostile.stdin.flush()
    hostile.wait(30)
    after = _settled_rss(pid) - start
    assert max(peaks) <= 40, (start, peaks)
    assert after <= 16, (start, peaks, after)  # fallen back (a busy machine keeps a little more)
    with daemon.client() as c:
        assert c.subscribe("").status.pid == pid
