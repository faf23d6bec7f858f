"""`ctxkeep memory`: what memory across sessions can bring back into a prompt, and taking
sessions or messages out of it."""

import argparse
import re
import sys

import msgspec

from .common import Styles, add_session_argument, connect, when
from .search import snippet


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "memory", help="search or prune memory across sessions",
        description="Memory brings what the user said in their other sessions into a prompt "
                    "(after the session's own recall), each passage with its session and date. "
                    "`memory search` shows what would come back for some words; `memory forget` "
                    "takes a session or some of its messages out (they stay in their session). "
                    "`ctxkeep set SESSION --memory all|none|private` sets a session's memory.")
    actions = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    search = actions.add_parser("search", help="what memory would bring back for these words",
                                description="The passages of every session memory may recall, best "
                                            "first, for QUERY; with --session, as a turn of that "
                                            "session would see them (its own messages left out).")
    search.add_argument("query", metavar="QUERY", nargs="+", help="the words")
    add_session_argument(search, "--session", "-s", default="", help="as a turn of this session would see it")
    search.add_argument("--limit", type=int, default=10, help="at most this many hits (default 10)")
    search.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    forget = actions.add_parser("forget", help="never recall a session, or some of its messages, elsewhere",
                                description="Memory forgets SESSION (or only the messages --message "
                                            "names): they stay in their session, and never come back "
                                            "into another. --undo remembers them again.")
    add_session_argument(forget)
    forget.add_argument("--message", "-m", type=int, action="append", default=[], metavar="N",
                        help="only message #N (repeatable; `ctxkeep show` numbers them)")
    forget.add_argument("--undo", action="store_true", help="remember them again")
    forget.add_argument("--json", action="store_true", help="print the session as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    return _search(args) if args.memory_command == "search" else _forget(args)


def _search(args: argparse.Namespace) -> int:
    with connect(args) as client:
        reply = client.memory_search(" ".join(args.query), session=args.session, limit=args.limit)
    if args.json:
        print(msgspec.json.encode(reply).decode())
        return 0
    if not reply.hits:
        print("memory holds nothing that matches (private and forgotten sessions are never searched; "
              "`ctxkeep search` looks through every history word for word)", file=sys.stderr)
        return 1
    style = Styles(sys.stdout)
    pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, args.query)) + r")", re.I)
    for hit in reply.hits:
        print(f"{style.bold}{hit.session_name}{style.reset} {style.dim}#{hit.seq} {hit.role} "
              f"{when(hit.created)} · {hit.score:.0%}{style.reset}")
        print("  " + snippet(hit.text, pattern))
    print(f"{style.dim}`ctxkeep memory forget SESSION -m N` keeps one out of other sessions' prompts{style.reset}")
    return 0


def _forget(args: argparse.Namespace) -> int:
    with connect(args) as client:
        session = client.memory_forget(args.session, seqs=args.message, undo=args.undo).session
    if args.json:
        print(msgspec.json.encode(session).decode())
        return 0
    what = f"message{'s' if len(args.message) > 1 else ''} " + ", ".join(f"#{n}" for n in args.message) \
        if args.message else "the session"
    if args.undo:
        print(f"memory remembers {what} of {session.name} again")
    else:
        print(f"memory forgot {what} of {session.name}: never recalled into another session "
              f"(still in its own history; `--undo` brings it back)")
    return 0
