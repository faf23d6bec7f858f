"""`ctxkeep status`: is the daemon up, and can it reach Ollama?"""

import argparse
import time

import msgspec

from .common import connect, when


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("status", help="the daemon's status and Ollama's reachability",
                                 description="Show the daemon's status: version, sessions, "
                                             "running generations, and whether Ollama answers.")
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
    if o.reachable:
        print(f"  ollama    {o.version or 'reachable'} at {o.host}")
    elif not o.checked:
        print(f"  ollama    {o.host}: not checked yet")
    else:
        print(f"  ollama    NOT REACHABLE at {o.host}: start it (`ollama serve`), or set "
              "OLLAMA_HOST / ollama_host in config.toml")
    return 0
