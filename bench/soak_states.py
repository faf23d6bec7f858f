"""The lifecycle state machine, run long: many random programs against the real daemon.

    python bench/soak_states.py [--examples 200] [--steps 25]

Runs tests/daemon/test_state_machine.py (hypothesis, randomized) with more and longer programs
than CI does, and prints one JSON line: examples, steps, outcome, wall time.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from common import emit

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()
    env = dict(os.environ, CTXKEEP_STATE_EXAMPLES=str(args.examples),
               CTXKEEP_STATE_STEPS=str(args.steps), CTXKEEP_STATE_RANDOM="1",
               CTXKEEP_STATE_RESTARTS=str(args.steps))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "--timeout", "0",
                             "-p", "no:cacheprovider", "tests/daemon/test_state_machine.py"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    emit(bench="state_machine", examples=args.examples, steps=args.steps,
         passed=result.returncode == 0, seconds=round(time.monotonic() - started, 1))
    if result.returncode:
        print(result.stdout[-6000:])


if __name__ == "__main__":
    main()
