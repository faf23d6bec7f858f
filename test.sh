#!/usr/bin/env bash
# Install ctxkeep with its test dependencies into ./.venv and run the whole test suite:
# first everything but the long run, then the long run (2,000 turns) with its own timeout.
# Usage: ./test.sh [pytest arguments]   (with arguments: one pytest run with just those)
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
.venv/bin/python -m pytest -m "not long"
exec .venv/bin/python -m pytest -m long --timeout 600
