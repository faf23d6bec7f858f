"""Start-up costs a user waits for: a whole `ctxkeep status` process, ctxkeepd from launch
to its first answered ping, from then to its first HTTP answer (the front door opens on its
first caller), and from SIGTERM to its exit (a restart is both), each beside `python -c
pass` in the same run; and the CPU a daemon's start, one HTTP answer and stop take.

    python bench/startup.py [--n 15] [--against REV]

`--against REV` times the daemon of commit REV in the same rounds (the same stand-in, the
same client code), each round both, in turn.

Rounds interleave the baseline and the target. `ctxkeep status` talks to a daemon that
is already running (against the stand-in in a process of its own). The daemon's start
is timed from `Popen` until a DEALER that connected at once (retrying every 2 ms: with
ZeroMQ's default of 100 ms the figure would measure the retry interval) gets its `pong`
(a fresh store each time). Goals: `status` at most 150 ms over `python -c pass`; the daemon's
first answered ping within 300 ms.

The package's modules are byte-compiled first, as `pip install` does for an installed
ctxkeep: a development checkout run with PYTHONDONTWRITEBYTECODE set (as on these
machines) would otherwise compile every module from source in every process.
"""

import argparse
import compileall
import contextlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import checkout_at, daemon_for, emit, standin_process, version_status

import zmq

from ctxkeep.protocol.paths import http_socket
from harness import DaemonProcess

PING = b'{"type":"ping","id":"start"}'


def run_once(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def daemon_start(url: str, code: str | None = None) -> tuple[float, float, float, float]:
    """Seconds from launching ctxkeepd on a fresh store to its first pong, from then to its
    first HTTP answer, and from SIGTERM to the process's exit; and the CPU seconds of it all
    (`code`: a folder holding the `ctxkeep` package to run, as `checkout_at` gives)."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    daemon = DaemonProcess(root, url, log_level="warning")
    if code is not None:
        daemon.env["PYTHONPATH"] = code
    ctx = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RECONNECT_IVL, 2)  # retry every 2 ms, not ZeroMQ's default 100 ms
    try:
        cpu = children_cpu()
        t0 = time.perf_counter()
        daemon.start(wait=False)
        dealer.connect(daemon.control)  # ZeroMQ connects as soon as the socket exists
        dealer.send(PING)
        if not dealer.poll(20_000):
            raise RuntimeError("ctxkeepd did not answer a ping within 20 s")
        dealer.recv()
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        if b" 200 " not in version_status(http_socket(daemon.control)):
            raise RuntimeError("ctxkeepd's front door did not answer GET /api/version with 200")
        answered = time.perf_counter() - t1
        t2 = time.perf_counter()
        daemon.stop()
        return started, answered, time.perf_counter() - t2, children_cpu() - cpu
    finally:
        dealer.close()
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)


def byte_compile() -> None:
    """Compile ctxkeep's modules to bytecode, where Python looks for it."""
    import ctxkeep.clients
    import ctxkeep.daemon
    import ctxkeep.protocol
    for package in (ctxkeep.clients, ctxkeep.daemon, ctxkeep.protocol):
        for folder in package.__path__:
            compileall.compile_dir(folder, quiet=1)


def ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="rounds")
    parser.add_argument("--against", metavar="REV", help="also time the daemon of this commit, each round")
    args = parser.parse_args()
    cli = str(Path(sys.executable).parent / "ctxkeep")
    byte_compile()
    bare, status, bare2 = [], [], []
    daemons: dict[str, list[tuple[float, float, float, float]]] = {"this": []}
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(standin_process())
        daemon = stack.enter_context(daemon_for(url))
        codes: dict[str, str | None] = {"this": None}
        if args.against:
            codes[args.against] = stack.enter_context(checkout_at(args.against))
            compileall.compile_dir(codes[args.against], quiet=1)
            daemons[args.against] = []
        for _ in range(3):  # warm the page cache
            run_once([sys.executable, "-c", "pass"])
            run_once([cli, "status"], daemon.env)
        for _ in range(args.n):
            bare.append(run_once([sys.executable, "-c", "pass"]))
            status.append(run_once([cli, "status"], daemon.env))
            bare2.append(run_once([sys.executable, "-c", "pass"]))
            for name, code in codes.items():
                daemons[name].append(daemon_start(url, code))
    emit(bench="startup", target="python_-c_pass", p50_ms=ms(bare))
    emit(bench="startup", target="ctxkeep_status_process", p50_ms=ms(status),
         added_ms=round(ms(status) - ms(bare), 1), goal="added <= 150 ms")
    for name, runs in daemons.items():
        starts, answers, stops, cpus = (list(column) for column in zip(*runs))
        emit(bench="startup", code=name, target="ctxkeepd_launch_to_first_pong", p50_ms=ms(starts),
             max_ms=round(max(starts) * 1000, 1), python_floor_ms=ms(bare2), goal="<= 300 ms")
        emit(bench="startup", code=name, target="ctxkeepd_first_pong_to_first_http_answer", p50_ms=ms(answers),
             max_ms=round(max(answers) * 1000, 1))
        emit(bench="startup", code=name, target="ctxkeepd_sigterm_to_exit", p50_ms=ms(stops),
             max_ms=round(max(stops) * 1000, 1), python_floor_ms=ms(bare2))
        emit(bench="startup", code=name, target="ctxkeepd_cpu_start_http_answer_stop", p50_ms=ms(cpus))


if __name__ == "__main__":
    main()
