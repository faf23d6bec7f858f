"""The long run as a benchmark: 2,000 scripted turns in a 4,096-token window.

    python bench/longrun.py [--turns 2000] [--window 4096]

Prints one JSON line: compactions by level (and skipped), user summaries, peak and mean
usage after compactions, prompt tokens per turn, wall time and any violation
of the invariants the long-run test asserts.
"""

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from common import emit

from harness import DaemonProcess
from longrun import run
from ollama_standin import OllamaStandin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--window", type=int, default=4096)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    standin = OllamaStandin().start()
    daemon = DaemonProcess(root, standin.url)
    try:
        daemon.start()
        report = run(daemon, standin, root, turns=args.turns, window=args.window)
    finally:
        daemon.stop()
        standin.stop()
    shutil.rmtree(root, ignore_errors=True)
    emit(bench="longrun", turns=report.turns, window=args.window, seconds=round(report.seconds, 1),
         turns_per_second=round(report.turns / report.seconds, 1),
         compactions_by_level={str(k): v for k, v in sorted(report.by_level.items())},
         skipped_by_level={str(k): v for k, v in sorted(report.skipped.items())}, user_summaries=report.user_summaries,
         peak_usage_after_compaction=round(max(report.fills_after, default=0), 3),
         mean_usage_after_compaction=round(statistics.fmean(report.fills_after or [0]), 3),
         prompt_tokens_mean=round(statistics.fmean(report.prompt_tokens), 1),
         prompt_tokens_max=max(report.prompt_tokens), truncations=len(standin.truncations),
         refusals=len(standin.refusals), violations=report.violations[:5])


if __name__ == "__main__":
    main()
