"""Start-up costs a user waits for: a whole `ctxkeep status` process, ctxkeepd from launch
to its first answered ping, and from SIGTERM to its exit (a restart is both), each beside
`python -c pass` in the same run.

    python bench/startup.py [--n 15]

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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import daemon_for, emit, standin_process

import zmq

from harness import DaemonProcess

PING = b'{"type":"ping","id":"start"}'


def run_once(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def daemon_start(url: str) -> tuple[float, float]:
    """Seconds from launching ctxkeepd on a fresh store to its first pong, and from SIGTERM
    (after the pong) to the process's exit."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    daemon = DaemonProcess(root, url, log_level="warning")
    ctx = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RECONNECT_IVL, 2)  # retry every 2 ms, not ZeroMQ's default 100 ms
    try:
        t0 = time.perf_counter()
        daemon.start(wait=False)
        dealer.connect(daemon.control)  # ZeroMQ connects as soon as the socket exists
        dealer.send(PING)
        if not dealer.poll(20_000):
            raise RuntimeError("ctxkeepd did not answer a ping within 20 s")
        dealer.recv()
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        daemon.stop()
        return started, time.perf_counter() - t1
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
    args = parser.parse_args()
    cli = str(Path(sys.executable).parent / "ctxkeep")
    byte_compile()
    bare, status, starts, stops, bare2 = [], [], [], [], []
    with standin_process() as url, daemon_for(url) as daemon:
        for _ in range(3):  # warm the page cache
            run_once([sys.executable, "-c", "pass"])
            run_once([cli, "status"], daemon.env)
        for _ in range(args.n):
            bare.append(run_once([sys.executable, "-c", "pass"]))
            status.append(run_once([cli, "status"], daemon.env))
            bare2.append(run_once([sys.executable, "-c", "pass"]))
            started, stopped = daemon_start(url)
            starts.append(started)
            stops.append(stopped)
    emit(bench="startup", target="python_-c_pass", p50_ms=ms(bare))
    emit(bench="startup", target="ctxkeep_status_process", p50_ms=ms(status),
         added_ms=round(ms(status) - ms(bare), 1), goal="added <= 150 ms")
    emit(bench="startup", target="ctxkeepd_launch_to_first_pong", p50_ms=ms(starts),
         max_ms=round(max(starts) * 1000, 1), python_floor_ms=ms(bare2), goal="<= 300 ms")
    emit(bench="startup", target="ctxkeepd_sigterm_to_exit", p50_ms=ms(stops), max_ms=round(max(stops) * 1000, 1),
         python_floor_ms=ms(bare2))


if __name__ == "__main__":
    main()
