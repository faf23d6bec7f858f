"""Ping round trip through ctxkeepd vs a bare pyzmq ROUTER echo, measured in the same run.

    python bench/roundtrip.py [--n 5000]

Prints JSON lines: one per target, then the ratio of the p50s (target: at most 2x).
"""

import argparse
import multiprocessing
import tempfile
import time

import zmq

from common import emit, percentiles, running_daemon

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
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=500)
    args = parser.parse_args()

    endpoint = f"ipc://{tempfile.mkdtemp(prefix='ckb', dir='/tmp')}/echo"
    server = multiprocessing.Process(target=echo_server, args=(endpoint,), daemon=True)
    server.start()
    bare = percentiles(measure(endpoint, args.n, args.warmup))
    ctx = zmq.Context()
    stopper = ctx.socket(zmq.DEALER)
    stopper.connect(endpoint)
    stopper.send(b"stop")
    server.join(5)
    emit(bench="roundtrip", target="bare_pyzmq_router_echo", **bare)

    with running_daemon() as (daemon, _):
        through = percentiles(measure(daemon.control, args.n, args.warmup))
    emit(bench="roundtrip", target="ctxkeepd_ping", **through)
    emit(bench="roundtrip", target="ratio", p50=round(through["p50_us"] / bare["p50_us"], 2),
         p99=round(through["p99_us"] / bare["p99_us"], 2), goal_p50="<= 2.0")


if __name__ == "__main__":
    main()
