"""`ctxkeep config show` and `ctxkeep keys`: the daemon's configuration and CURVE keys.

Both are the daemon's files, so `ctxkeepd`'s own subcommands do the work, run
as a separate program (the client never imports the daemon's code).
"""

import argparse
import subprocess
import sys

from ..curve_keys import client_pair


def ctxkeepd(*args: str) -> int:
    """Run `ctxkeepd ARGS` (this Python's copy) and return its exit status."""
    return subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main", *args]).returncode


def add_config(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "config", help="the daemon's configuration",
        description="`ctxkeep config show` prints the effective configuration (the file, the "
                    "environment and the defaults) with where each value comes from.")
    parser.add_argument("action", nargs="?", default="show", choices=["show"],
                        help="show (the default)")
    parser.add_argument("--file", default=None, help="another configuration file")
    parser.set_defaults(run=lambda args: ctxkeepd(*(["--config", args.file] if args.file else []),
                                                  "config", "show"))
    return parser


def add_keys(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "keys", help="CURVE keys for remote (TCP) clients",
        description="Without arguments: the daemon's public key, the authorized client keys, and "
                    "this user's own client key (created on first use). `add KEY [NAME]` admits a "
                    "client; `remove KEY` stops admitting it. A remote client sets "
                    "CTXKEEP_SERVER_KEY and CTXKEEP_CONTROL/CTXKEEP_EVENTS to tcp:// endpoints.")
    parser.add_argument("action", nargs="?", default="show", choices=["show", "add", "remove"])
    # A Z85 key may begin with "-": what follows the action is taken as it is, never as options.
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="KEY [NAME]",
                        help="a client's public key (add, remove), and a name for it (add)")
    parser.set_defaults(run=run_keys)
    return parser


def run_keys(args: argparse.Namespace) -> int:
    rest = [a for a in args.rest if a != "--"]
    if args.action in ("add", "remove"):
        if not rest:
            print(f"ctxkeep: `ctxkeep keys {args.action}` needs a KEY", file=sys.stderr)
            return 2
        key, name = rest[0], " ".join(rest[1:])
        return ctxkeepd("keys", args.action, "--", key, *([name] if name else []))
    code = ctxkeepd("keys", "show")
    print(f"this user's client public key: {client_pair()[0].decode()}")
    return code
