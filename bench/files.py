"""How much smaller a file's summary is than the file, on this repository's larger files.

    python bench/files.py [--min-bytes 8000]

Seed 001's target: a summary at least 90 % smaller than the full text. Prints
one JSON line per file (bytes and estimated tokens, full vs summary, the
reduction, and the time to summarize) and a closing line with the totals.
"""

import argparse
import time
from pathlib import Path

from common import emit

from ctxkeep.daemon.files import chunker
from ollama_standin import count_tokens

REPO = Path(__file__).resolve().parent.parent
KINDS = ("*.py", "*.md", "*.toml", "*.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-bytes", type=int, default=8000)
    args = parser.parse_args()
    files = sorted({p for kind in KINDS for p in REPO.rglob(kind)
                    if not {".venv", "build", ".git"} & set(p.parts) and p.stat().st_size >= args.min_bytes})
    total_full = total_summary = 0
    for path in files:
        text = path.read_text()
        t0 = time.perf_counter()
        summary = chunker.summarize(str(path), text)
        elapsed = time.perf_counter() - t0
        full_tokens, summary_tokens = count_tokens(text), count_tokens(summary)
        total_full += full_tokens
        total_summary += summary_tokens
        emit(bench="files", file=str(path.relative_to(REPO)), kind=chunker.kind_of(str(path)),
             bytes=len(text), summary_bytes=len(summary), tokens=full_tokens,
             summary_tokens=summary_tokens,
             reduction_pct=round(100 * (1 - summary_tokens / full_tokens), 1),
             summarize_ms=round(elapsed * 1000, 2))
    emit(bench="files", file="(all)", files=len(files), tokens=total_full,
         summary_tokens=total_summary,
         reduction_pct=round(100 * (1 - total_summary / max(total_full, 1)), 1), goal_pct=">= 90")


if __name__ == "__main__":
    main()
