"""Ping round trip through ctxkeepd vs a bare pyzmq ROUTER echo, measured in the same run.

    python bench/roundtrip.py [--n 1000] [--rounds 9]

Both servers run in processes of their own for the whole run; rounds interleave them
(`n` round trips to the echo, then `n` pings to the daemon), so both see the same
machine. Prints JSON lines: each target's percentiles over all rounds, then the median
over rounds of the ratio of the rounds' p50s (goal: at most 2x) and every round's ratio.
"""

import argparse
import multiprocessing
import statistics
import tempfile
import time

from common import emit, percentiles, running_daemon

import zmq

PING = b'{"type":"ping","id":"b"}'


def echo_server(endpoint: str) -> None:
    """The baseline: a ROUTER that sends every message straight back."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind(endpoint)
    while True:
        frames = router.recv_multipart()
        if frames[1] == b"stop":
            break
        router.send_multipart(frames)


def measure(endpoint: str, n: int, warmup: int) -> list[float]:
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)
    samples = []
    for i in range(n + warmup):
        t0 = time.perf_counter()
        dealer.send(PING)
        dealer.recv()
        if i >= warmup:
            samples.append(time.perf_counter() - t0)
    dealer.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="round trips per target per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=500)
    args = parser.parse_args()

    endpoint = f"ipc://{tempfile.mkdtemp(prefix='ckb', dir='/tmp')}/echo"
    server = multiprocessing.Process(target=echo_server, args=(endpoint,), daemon=True)
    server.start()
    bare_all, ours_all, ratios = [], [], []
    with running_daemon() as (daemon, _):
        measure(endpoint, args.warmup, 0)
        measure(daemon.control, args.warmup, 0)
        for _ in range(args.rounds):
            bare = measure(endpoint, args.n, 0)
            ours = measure(daemon.control, args.n, 0)
            ratios.append(statistics.median(ours) / statistics.median(bare))
            bare_all += bare
            ours_all += ours
    stopper = zmq.Context.instance().socket(zmq.DEALER)
    stopper.connect(endpoint)
    stopper.send(b"stop")
    server.join(5)
    emit(bench="roundtrip", target="bare_pyzmq_router_echo", **percentiles(bare_all))
    emit(bench="roundtrip", target="ctxkeepd_ping", **percentiles(ours_all))
    emit(bench="roundtrip", target="ratio", p50=round(statistics.median(ratios), 2),
         per_round=[round(r, 2) for r in ratios], goal_p50="<= 2.0")


if __name__ == "__main__":
    main()
