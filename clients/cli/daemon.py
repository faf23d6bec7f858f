"""`ctxkeep daemon run`: start ctxkeepd in the foreground."""

import argparse
import os
import sys


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("daemon", help="run the daemon",
                                 description="Manage ctxkeepd.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run_parser = actions.add_parser("run", help="run ctxkeepd in the foreground",
                                    description="Run ctxkeepd in the foreground (Ctrl-C stops it). "
                                                "Arguments after `--` go to ctxkeepd.")
    run_parser.add_argument("daemon_args", nargs=argparse.REMAINDER,
                            help="ctxkeepd options, e.g. -- --log-level debug")
    return parser


def run(args: argparse.Namespace) -> int:
    extra = [a for a in args.daemon_args if a != "--"]
    # A separate program: the client never imports the daemon's code.
    os.execv(sys.executable, [sys.executable, "-m", "ctxkeep.daemon.main", *extra])
    return 0  # not reached
