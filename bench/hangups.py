"""Hang-ups at random moments (issue 59): clients that hang up before the question is
read or accepted, mid-stream or after the last chunk — over HTTP on both APIs, stateless
and named, and over ZeroMQ — then retry; what they leave behind.

    python bench/hangups.py [--rounds 1000]

Prints one JSON line: retries not answered, questions stored twice or left unanswered,
sessions made empty, and whether `ctxkeepd check --settled` passed after a clean stop
(goal: all zero, and passed).
"""

import argparse
import shutil
import tempfile
from pathlib import Path

from common import emit

from hangups import hang_ups
from harness import DaemonProcess
from ollama_standin import OllamaStandin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    args = parser.parse_args()
    standin = OllamaStandin(chunk_delay=0.004).start()
    root = Path(tempfile.mkdtemp(prefix="ckhang", dir="/tmp"))
    try:
        out = hang_ups(DaemonProcess(root, standin.url, log_level="warning").start(), args.rounds)
    finally:
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="hangups", rounds=out.rounds, failed_retries=len(out.failed_retries), duplicates=len(out.duplicates),
         unanswered=len(out.unanswered), empty_sessions=out.empty_sessions, log_errors=len(out.errors), check_settled=out.check or "passed")


if __name__ == "__main__":
    main()
