"""`ctxkeep branch`: a new session holding a session's history up to a message."""

import argparse
import shlex

from .common import add_session_argument, connect, session_line


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "branch", help="branch a session: a new one with its history up to a message",
        description="Make a new session whose history is SESSION's up to message SEQ (its last "
                    "message without --at), with the context as it stood then: its summaries, "
                    "checkpoints, pins and goals. SESSION is not changed. `ctxkeep show` "
                    "numbers the messages.")
    add_session_argument(parser)
    parser.add_argument("--at", type=int, default=None, metavar="SEQ",
                        help="the last message the branch keeps (default: the last one)")
    parser.add_argument("--name", default="", help="the branch's name (default: SESSION's name "
                                                   "and \"(branch)\")")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        made = client.branch(args.session, at=args.at, name=args.name).session
    print(session_line(made))
    print(f"branched from {args.session} at #{made.branched_at}; continue it with "
          f"`ctxkeep chat {shlex.quote(made.name)}`")
    return 0
