"""Does slow work stall other clients? `ping` latency while slow requests run.

    python bench/stall.py [--pings 400] [--neighbours 2]

One client pings the daemon in a loop while another keeps it busy with, in turn:
nothing (the baseline), dry-run compactions that wait on a slow `/api/show` (1 s
each), sends with ten `@file` references to a 1 MiB Python file (as outlines, and in
full), sends listing a folder of 50,000 entries, imports of 10,000 messages each
compacted by the first question into a 4,096 window, and 60 imports of 490 messages each
after memory's index is built, each followed by a question that has memory catch up
(issue 58: ping p99 ≤ 100 ms) — all beside `--neighbours` CPU-bound processes of their own
(a busy machine). Prints one JSON line per load: ping p50/p99/max (goal: p99 under 50 ms
whatever runs). `--loads NAME,...` runs only those.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import emit, percentiles, running_daemon

import zmq


def pinger(control: str, n: int, until: threading.Thread | None = None) -> list[float]:
    """`n` pings, one every 5 ms or so; with `until`, on for as long as that thread works."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(control)
    samples = []
    i = 0
    while i < n or (until is not None and until.is_alive()):
        i += 1
        t0 = time.perf_counter()
        sock.send(json.dumps({"type": "ping", "id": str(i)}).encode())
        assert sock.poll(30000), "no pong in 30 s"
        sock.recv()
        samples.append(time.perf_counter() - t0)
        time.sleep(0.005)
    sock.close()
    return samples


def busy(control: str, frames: list[bytes], stop: threading.Event) -> None:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(control)
    while not stop.is_set():
        for frame in frames:
            sock.send(frame)
            while not stop.is_set() and not sock.poll(100):
                pass
            if stop.is_set():
                break
            sock.recv()
    sock.close()


def imports(daemon, stop: threading.Event) -> None:
    """Import 10,000 messages as a new session, ask a question (its turn compacts the
    import to fit a 4,096 window), until the question's answer ends; again until stopped."""
    import random
    rng = random.Random(1)
    words = "garden river kitchen walked slowly under bright autumn trees while friends talked".split()
    messages = [{"role": ("user", "assistant")[i % 2], "content": " ".join(rng.choice(words) for _ in range(40))}
                for i in range(10000)]
    with daemon.client(timeout=120) as c:
        c.subscribe("")
        while not stop.is_set():
            sid = c.import_session(model="qwen2.5:7b", num_ctx=4096, messages=messages).session.id
            c.follow(c.send(sid, "What did we say about the garden?").generation_id, timeout=600)


def many_imports(daemon, stop: threading.Event, sessions: int = 60, size: int = 490) -> None:
    """Memory's index built (a first question), then `sessions` imports of `size` messages,
    each followed by a question in another session (memory catches up with the import)."""
    import random
    rng = random.Random(2)
    words = "garden river kitchen walked slowly under bright autumn trees while friends talked".split()
    with daemon.client(timeout=120) as c:
        c.subscribe("")
        asker = c.create_session(model="qwen2.5:7b", num_ctx=4096).session.id
        c.turn(asker, "What did I say about my garden?")
        for n in range(sessions):
            if stop.is_set():
                return
            messages = [{"role": ("user", "assistant")[i % 2],
                         "content": f"note {n}-{i}: " + " ".join(rng.choice(words) for _ in range(30))}
                        for i in range(size)]
            c.import_session(model="qwen2.5:7b", num_ctx=4096, messages=messages)
            c.turn(asker, f"What did I say about the river in note {n}?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=400)
    parser.add_argument("--loads", default="", help="only these loads (comma-separated names)")
    parser.add_argument("--neighbours", type=int, default=2,
                        help="CPU-bound processes running beside the daemon (default: 2)")
    args = parser.parse_args()
    neighbours = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                  for _ in range(args.neighbours)]
    try:
        run(args)
    finally:
        for p in neighbours:
            p.kill()


def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="ckstall"))
    (work / "big.py").write_text("".join(f"def f{i}(x):\n    return x + {i}  # {'y' * 40}\n"
                                         for i in range(13000)))  # just under file_max_bytes
    (work / "many").mkdir()
    for i in range(50000):
        (work / "many" / f"f{i:05}").touch()
    with running_daemon() as (daemon, standin):
        with daemon.client() as c:
            sid = c.create_session(model="qwen2.5:7b", num_ctx=32768).session.id
            c.set_model(sid, auto_compaction=False)
        loads = {
            "idle": [],
            "slow_api_show": [json.dumps({"type": "compact", "id": "c", "session": sid,
                                          "dry_run": True}).encode()],
            "ten_1mib_file_outlines": [json.dumps({"type": "send", "id": "s", "session": sid,
                                                   "cwd": str(work),
                                                   "text": "read " + " ".join(["@big.py"] * 10)}).encode()],
            "ten_1mib_files_in_full": [json.dumps({"type": "send", "id": "s", "session": sid,
                                                   "cwd": str(work),
                                                   "text": "read " + " ".join(["@big.py:full"] * 10)}).encode()],
            "50k_entry_listing": [json.dumps({"type": "send", "id": "l", "session": sid,
                                              "cwd": str(work), "text": "what is in @many/"}).encode()],
            "10k_message_import_compacted": [],
            "60x490_imports_with_memory": [],
        }
        for name, frames in loads.items():
            if args.loads and name not in args.loads.split(","):
                continue
            stop = threading.Event()
            if name == "slow_api_show":
                for _ in range(200):
                    standin.fail_next("delay", seconds=1.0, path="/api/show")
            pings, worker = args.pings, None
            if name == "10k_message_import_compacted":  # pinged for as long as an import takes
                pings, worker = args.pings * 10, threading.Thread(target=imports, args=(daemon, stop), daemon=True)
            elif name == "60x490_imports_with_memory":
                pings, worker = args.pings * 20, threading.Thread(target=many_imports, args=(daemon, stop), daemon=True)
            elif frames:
                worker = threading.Thread(target=busy, args=(daemon.control, frames, stop), daemon=True)
            if worker is not None:
                worker.start()
                time.sleep(0.2)
            began = time.monotonic()
            samples = pinger(daemon.control, pings, worker if name.endswith(("_compacted", "_memory")) else None)
            took = time.monotonic() - began
            stop.set()
            if worker is not None:
                worker.join()
            standin.faults.clear()
            stats = percentiles(samples)
            emit(bench="stall", load=name, n=stats["n"], p50_ms=round(stats["p50_us"] / 1000, 2),
                 p99_ms=round(stats["p99_us"] / 1000, 2),
                 max_ms=round(max(samples) * 1000, 2), seconds=round(took, 1), neighbours=args.neighbours,
                 goal_p99_ms="< 50")


if __name__ == "__main__":
    main()
