#!/usr/bin/env bash
# Install ctxkeep with its test dependencies into ./.venv and run the test suite (everything
# but the 2,000-turn long run) on up to 4 processes (pytest-xdist; 2 on a 2-core machine).
# Usage: ./test.sh [pytest arguments]   (with arguments: one pytest run with just those)
#        ./test.sh -m long --timeout 600   the long run (CI runs it as a step of its own)
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/python -m pytest -m "not long" -n auto --maxprocesses 4
