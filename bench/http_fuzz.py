"""Random requests at the HTTP front door (issue 59): every route's valid body mutated,
bodies cut short or not JSON, broken request lines and headers (tests/http_fuzz.py).

    python bench/http_fuzz.py [--cases 10000] [--seed 60]

Prints one JSON line: the statuses answered, how many were 500s or went unanswered, and the
daemon's log lines at ERROR or with a traceback (goal: 0, 0 and 0).
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import emit

from harness import DaemonProcess
from http_fuzz import fuzz
from ollama_standin import OllamaStandin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=60)
    args = parser.parse_args()
    standin = OllamaStandin().start()
    root = Path(tempfile.mkdtemp(prefix="ckfuzz", dir="/tmp"))
    daemon = DaemonProcess(root, standin.url, log_level="warning").start()
    started = time.perf_counter()
    try:
        out = fuzz(daemon, args.cases, args.seed)
        alive = daemon.proc is not None and daemon.proc.poll() is None
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="http_fuzz", cases=out.cases, seconds=round(time.perf_counter() - started, 1),
         statuses=dict(sorted(out.statuses.items())), server_errors=len(out.server_errors),
         unanswered=len(out.unanswered), log_errors=len(out.log_errors), still_serving=alive,
         first_server_errors=[r.decode(errors="replace") for r in out.server_errors[:3]])


if __name__ == "__main__":
    main()
