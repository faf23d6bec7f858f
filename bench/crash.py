"""The crash soak: SIGKILL the daemon at random points many times over one store.

    python bench/crash.py [--kills 200] [--seed 1]

Prints one JSON line: kills (by what was running), questions acknowledged,
lost, left unanswered after restart, store invariant failures (read-only
checker), failed restarts, and the wall time.
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import emit

from crash import run
from harness import DaemonProcess
from ollama_standin import OllamaStandin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ckc", dir="/tmp"))
    standin = OllamaStandin().start()
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    started = time.monotonic()
    try:
        report = run(daemon, standin, kills=args.kills, seed=args.seed)
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="crash", kills=report.kills, by_mode=report.by_mode,
         acknowledged=report.acknowledged, lost=len(report.lost),
         unanswered=len(report.unanswered), invariant_failures=len(report.invariant_failures),
         restarts_failed=report.restarts_failed, seconds=round(time.monotonic() - started, 1))
    for line in report.lost[:5] + report.unanswered[:5] + report.invariant_failures[:5]:
        print("  " + line)


if __name__ == "__main__":
    main()
