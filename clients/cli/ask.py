"""`ctxkeep ask`: one turn, the answer on stdout (for scripts)."""

import argparse
import os
import sys

from ...protocol.events import GenerationError
from .common import connect, fail, stream_turn


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "ask", help="send one message and print the answer",
        description="Send one user turn to SESSION and stream the answer to stdout. "
                    "Exit status 1 when the generation fails (the error on stderr).")
    parser.add_argument("session", metavar="SESSION", help="session id or name")
    parser.add_argument("text", metavar="TEXT", help="the message; `-` reads it from stdin")
    return parser


def run(args: argparse.Namespace) -> int:
    text = sys.stdin.read().rstrip("\n") if args.text == "-" else args.text
    if not text.strip():
        return fail("the message is empty")
    with connect(args) as client:
        client.subscribe("")
        end = stream_turn(client, args.session, text, sys.stdout, cwd=os.getcwd())
    if isinstance(end, GenerationError):
        sys.stdout.write("\n" if end.partial else "")
        return fail(f"{end.code}: {end.message}")
    sys.stdout.write("\n")
    return 0
