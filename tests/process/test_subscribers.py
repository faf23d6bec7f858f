"""Subscribers that could hurt the daemon's process: subscriptions bounded and released, a
slow subscriber loses the newest events and sees the gap, a hostile one cannot grow its
memory (RSS)."""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from conftest import until_idle
from ctxkeep.clients import CtxkeepError
from ctxkeep.protocol.events import GenerationToken, SessionCreated

MODEL = "qwen2.5:7b"


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


@pytest.mark.early
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
