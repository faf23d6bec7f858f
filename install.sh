#!/usr/bin/env bash
# Install ctxkeep into ./.venv and start ctxkeepd in the background.
# Usage: ./install.sh            (again at any time: it upgrades and restarts)
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

echo "==> installing ctxkeep into $here/.venv"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt '.[gui]'

state="${XDG_STATE_HOME:-$HOME/.local/state}/ctxkeep"
mkdir -p "$state"
if .venv/bin/ctxkeep status --timeout 2 >/dev/null 2>&1; then
    echo "==> restarting the running ctxkeepd"
    pid=$(.venv/bin/ctxkeep status --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    kill "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
fi
echo "==> starting ctxkeepd (log: $state/ctxkeepd.log)"
nohup .venv/bin/ctxkeepd >>"$state/ctxkeepd.log" 2>&1 &
for _ in $(seq 50); do
    .venv/bin/ctxkeep status --timeout 1 >/dev/null 2>&1 && break
    sleep 0.2
done
.venv/bin/ctxkeep status || { echo "ctxkeepd did not start: see $state/ctxkeepd.log" >&2; exit 1; }
reachable=yes
if ! .venv/bin/ctxkeep status --json | grep -q '"reachable":true'; then
    reachable=no
    echo
    echo "Ollama is not reachable, so chats will fail until it is: install and start it"
    echo "(https://ollama.com), or set OLLAMA_HOST before running ./install.sh."
fi
echo
echo "Ready. Put $here/.venv/bin on your PATH."
if command -v dpkg >/dev/null && [ -n "${DISPLAY:-}" ]; then
    missing=""
    for lib in libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1; do
        dpkg -s "$lib" >/dev/null 2>&1 || missing="$missing $lib"
    done
    [ -z "$missing" ] || echo "The window (ctxkeep-gui) needs:$missing — sudo apt-get install$missing"
fi
if [ "$reachable" = no ]; then
    echo "Then, once Ollama runs: ctxkeep status     (it says whether the default model is installed), then: ctxkeep chat"
    exit 0
fi
# The next step names a model Ollama really has (or says how to get one).
model=$(.venv/bin/ctxkeep models --json 2>/dev/null | .venv/bin/python -c '
import json, sys
data = json.load(sys.stdin)
names = [m["name"] for m in data["models"] if not m["name"].startswith("nomic-embed")]
default = [m["name"] for m in data["models"] if m["default"]]
print("default " + default[0] if default else "other " + names[0] if names else "")' 2>/dev/null || true)
if [ "${model%% *}" = default ]; then
    echo "Then: ctxkeep chat     (on ${model#* }; ctxkeep models lists what Ollama has)"
elif [ -n "$model" ]; then
    echo "Then: ctxkeep models default ${model#* }     (the default model is not installed), then: ctxkeep chat"
else
    echo "Ollama has no chat model yet: ctxkeep models pull llama3.2 (or another), then: ctxkeep chat"
fi
