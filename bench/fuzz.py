"""The fuzz soak: many random control frames against a running daemon.

    python bench/fuzz.py [--frames 50000]

Prints one JSON line: frames sent, error replies by code, the daemon's RSS
before and after (MiB), and whether it still answers ping.
"""

import argparse
import json
import time
from collections import Counter

from common import emit, running_daemon  # (puts tests/ on the path)

import zmq

import fuzzframes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50000)
    args = parser.parse_args()
    with running_daemon() as (daemon, _standin):
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(daemon.control)
        codes: Counter = Counter()

        def ask(frame: bytes) -> dict:
            sock.send(frame)
            if not sock.poll(10000):
                raise AssertionError(f"no reply to {frame[:80]!r}")
            return json.loads(sock.recv())

        def send(frame: bytes) -> None:
            reply = ask(frame)
            fuzzframes.check_reply(reply)
            codes[reply.get("code", reply["type"])] += 1
        ask(b'{"type": "ping", "id": "warm"}')
        before = rss_mib(daemon.proc.pid)
        started = time.monotonic()
        fuzzframes.run(send, args.frames)
        alive = ask(b'{"type": "ping", "id": "after"}')["type"] == "pong"
        emit(bench="fuzz", frames=sum(codes.values()), seconds=round(time.monotonic() - started, 1),
             replies=dict(codes.most_common()), rss_before_mib=before,
             rss_after_mib=rss_mib(daemon.proc.pid), still_answers=alive)
        sock.close()


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return round(kib / 1024, 1)


if __name__ == "__main__":
    main()
