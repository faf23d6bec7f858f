"""`ctxkeep status`: is the daemon up, and can it reach its model servers?"""

import argparse
import time

import msgspec

from ctxkeep.protocol.status import ModelSpeed
from ctxkeep.protocol.structs import BackendStatus

from .common import connect, when


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("status", help="the daemon's status and its model servers' reachability",
                                 description="Show the daemon's status: version, sessions, "
                                             "running generations, and whether Ollama (or each "
                                             "model server of config.toml's [[backends]]) answers.")
    parser.add_argument("--json", action="store_true", help="print the status as JSON")
    return parser


#: How long a daemon that has just started may take to ask Ollama for the first time.
FIRST_CHECK_S = 5.0


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        s = client.status().status
        deadline = time.monotonic() + FIRST_CHECK_S
        while not s.ollama.checked and time.monotonic() < deadline:  # just started: wait for it
            time.sleep(0.05)
            s = client.status().status
    if args.json:
        print(msgspec.json.encode(s).decode())
        return 0
    o = s.ollama
    print(f"ctxkeepd {s.version} (protocol {s.protocol}), pid {s.pid}, up since {when(s.started)}")
    print(f"  control   {s.control_endpoint}")
    print(f"  events    {s.events_endpoint}")
    print(f"  store     {s.store_path}")
    print(f"  sessions  {s.sessions}, generations running: {s.generations_running}")
    missing = "" if s.default_model_installed is not False else (
        f" — NOT INSTALLED in Ollama: `ctxkeep models pull {s.default_model}`, or make an "
        "installed one the default (`ctxkeep models default NAME`; `ctxkeep models` lists them)")
    print(f"  model     {s.default_model} (the default of new sessions){missing}")
    if s.recall:
        print(f"  recall    {s.recall}")
    for i, m in enumerate(s.speeds):  # measured since the daemon started
        print(f"  {'speeds' if i == 0 else '':8}  {speed_line(m)}")
    for i, said in enumerate(s.summaries):  # since the daemon started
        print(f"  {'summary' if i == 0 else '':8}  {said.model}: {said.note}")
    several = len(s.backends) > 1 or any(b.kind != "ollama" or b.name != "ollama" for b in s.backends)
    if several:
        for i, b in enumerate(s.backends):
            print(f"  {'backends' if i == 0 else '':8}  {backend_line(b)}")
    elif o.reachable:
        print(f"  ollama    {o.version or 'reachable'} at {o.host}")
    elif not o.checked:
        print(f"  ollama    {o.host}: not checked yet")
    else:
        print(f"  ollama    NOT REACHABLE at {o.host}: start it (`ollama serve`), or set "
              "OLLAMA_HOST / ollama_host in config.toml")
    return 0


def backend_line(b: BackendStatus) -> str:
    """One model server: its name, kind, URL, and whether it answers."""
    kind = f"{b.kind} {b.version}".strip()
    if b.reachable:
        busy = f", {b.busy} call{'s' if b.busy != 1 else ''} running" if b.busy else ""
        return f"{b.name} ({kind}) at {b.host}: up{busy}"
    if not b.checked:
        return f"{b.name} ({kind}) at {b.host}: not checked yet"
    again = f"; asked again in {b.retry_in:.0f} s" if b.retry_in else ""
    return f"{b.name} ({kind}) at {b.host}: DOWN ({b.error or 'unreachable'}){again}"


def speed_line(m: ModelSpeed) -> str:
    """A model's measured speeds here, and the bound they put on recall's block."""
    said = ", ".join(f"{what} {n:,.0f} tokens/s" for what, n in (("reads", m.read), ("writes", m.write)) if n)
    bound = f"; recall's block ≤ {m.recall_tokens:,} tokens (recall_read_seconds)" if m.recall_tokens else ""
    return f"{m.model} {said} here{bound}"
