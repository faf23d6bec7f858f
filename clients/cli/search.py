"""`ctxkeep search`: words across every session's history, the hits highlighted."""

import argparse
import re
import sys

import msgspec

from .common import Styles, add_session_argument, connect, when

#: Characters of context shown on each side of the first hit.
AROUND = 70


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "search", help="search every session's history",
        description="Find the messages, in every session or in one, that contain every word of "
                    "QUERY (whole words, any case), newest first, each with its session, number "
                    "and time and the words highlighted.")
    parser.add_argument("query", metavar="QUERY", nargs="+", help="the words")
    add_session_argument(parser, "--session", "-s", default="", help="only this session")
    parser.add_argument("--limit", type=int, default=20, help="at most this many hits (default 20)")
    parser.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    return parser


def snippet(text: str, pattern: re.Pattern[str]) -> str:
    """The text around the first hit, on one line."""
    flat = " ".join(text.split())
    hit = pattern.search(flat)
    start = max(0, (hit.start() if hit else 0) - AROUND)
    end = min(len(flat), (hit.end() if hit else 0) + AROUND)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        reply = client.search(" ".join(args.query), session=args.session, limit=args.limit)
    if args.json:
        print(msgspec.json.encode(reply).decode())
        return 0
    if not reply.words:
        print("ctxkeep: no searchable word in the query (words of two letters or more; the most "
              "common English words are not indexed)", file=sys.stderr)
        return 1
    style = Styles(sys.stdout)
    pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, reply.words)) + r")(?!\w)", re.I)
    for hit in reply.hits:
        m = hit.message
        print(f"{style.bold}{hit.session_name}{style.reset} {style.dim}#{m.seq} {m.role} "
              f"{when(m.created)}{style.reset}")
        print("  " + pattern.sub(lambda w: f"{style.bold}{style.red}{w.group(0)}{style.reset}",
                                 snippet(m.content, pattern)))
    shown = len(reply.hits)
    print(f"{style.dim}{reply.total} match{'es' if reply.total != 1 else ''}"
          + (f", newest {shown} shown" if shown < reply.total else "") + style.reset)
    return 0
