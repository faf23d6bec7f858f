"""How much memory does a subscriber that stops reading cost the daemon?

    python bench/slow_subscriber.py [--answers 30] [--words 180] [--buffer-mib 16]

Subscribers that never read are connected while answers stream as fast as the
stand-in can write them, each piece a batch of its own (`token_batch_ms = 0`) of
the most characters a batch may hold. Prints one JSON line per count of stalled
subscribers: the daemon's RSS growth, the events published, and the bound
`event_buffer_bytes` sets (each subscriber's queue holds at most that many bytes
of 4.5 KiB events; these are about 0.8 KiB, so the queue ends by count first).
"""

import argparse
import time
from pathlib import Path

from common import emit, running_daemon

import zmq

from ctxkeep.daemon.transports.zmq.publisher import EVENT_UNIT_BYTES, high_water_mark
from ctxkeep.protocol.events import GenerationError, ResponseGeneration

TERMINAL = (ResponseGeneration, GenerationError)

PIECE = "a" * 680  # the most characters one batch may hold (MAX_BATCH_CHARS)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(stalled: int, answers: int, words: int, buffer_mib: int) -> None:
    with running_daemon() as (daemon, standin):
        daemon.stop()
        daemon.write_config(f"token_batch_ms = 0\nevent_buffer_bytes = {buffer_mib << 20}\n"
                            "num_ctx = 32768\n")
        daemon.start()
        standin.reply_fn = lambda messages: " ".join([PIECE] * words)
        ctx = zmq.Context.instance()
        subs = []
        for _ in range(stalled):
            sub = ctx.socket(zmq.SUB)
            sub.setsockopt(zmq.LINGER, 0)
            sub.setsockopt(zmq.RCVHWM, 1)
            sub.connect(daemon.events)
            sub.subscribe(b"")
            subs.append(sub)
        with daemon.client(timeout=120) as c:
            c.subscribe("")
            time.sleep(0.5)  # the stalled subscribers' subscriptions are applied
            before = rss_mib(daemon.proc.pid)
            first = c.subscribe("").seq
            for _ in range(answers):  # a session each: every answer fills most of a window
                sid = c.create_session(model="qwen2.5:7b").session.id
                c.follow(c.send(sid, "go").generation_id, timeout=120)
            published = c.subscribe("").seq - first
            after = rss_mib(daemon.proc.pid)
        emit(bench="slow_subscriber", stalled=stalled, events=published,
             event_buffer_mib=buffer_mib, queue_events=high_water_mark(buffer_mib << 20),
             event_unit_bytes=EVENT_UNIT_BYTES, rss_before_mib=round(before, 1),
             rss_after_mib=round(after, 1), growth_mib=round(after - before, 1),
             bound_mib=stalled * buffer_mib)
        for sub in subs:
            sub.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=30)
    parser.add_argument("--words", type=int, default=180)
    parser.add_argument("--buffer-mib", type=int, default=16)
    args = parser.parse_args()
    for stalled in (1, 4):
        run(stalled, args.answers, args.words, args.buffer_mib)


if __name__ == "__main__":
    main()
