"""Shared bench helpers: the stand-in and daemon harness from tests/, percentiles, JSON lines."""

import json
import shutil
import statistics
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from harness import DaemonProcess  # noqa: E402
from ollama_standin import OllamaStandin  # noqa: E402


def percentiles(samples_s: list[float]) -> dict[str, float]:
    """p50/p99/mean in microseconds."""
    ordered = sorted(samples_s)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6  # noqa: E731
    return {"n": len(ordered), "p50_us": round(pick(0.50), 1), "p99_us": round(pick(0.99), 1),
            "mean_us": round(statistics.fmean(ordered) * 1e6, 1)}


def emit(**fields) -> None:
    """One JSON line on stdout."""
    print(json.dumps(fields), flush=True)


@contextmanager
def running_daemon(chunk_delay: float = 0.0):
    """(daemon, stand-in), both running, on a throw-away store."""
    root = Path(tempfile.mkdtemp(prefix="ckb", dir="/tmp"))
    standin = OllamaStandin(chunk_delay=chunk_delay).start()
    daemon = DaemonProcess(root, standin.url)
    daemon.env["CTXKEEPD_LOG_LEVEL"] = "warning"
    try:
        daemon.start()
        yield daemon, standin
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
