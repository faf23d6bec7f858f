"""`ctxkeep files`: the files a session's messages referenced."""

import argparse
import time

import msgspec

from .common import add_latest_session_argument, connect, session_or_latest


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "files", help="files referenced with @path in a session",
        description="List the files a session's messages referenced (@path), latest first, "
                    "with the mode and tokens of their latest expansion.")
    add_latest_session_argument(parser)
    parser.add_argument("--unused-in-last", type=int, default=0, metavar="N",
                        help="only files no message among the last N referenced")
    parser.add_argument("--json", action="store_true", help="print the list as one JSON array")
    return parser


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        files = client.files(session_or_latest(client, args.session),
                             unused_in_last=args.unused_in_last).files
    if args.json:
        print(msgspec.json.encode(files).decode())
        return 0
    if not files:
        print("no files referenced" + (" outside the last messages" if args.unused_in_last else ""))
        return 0
    rows = [("PATH", "MODE", "TOKENS", "USES", "LAST MSG", "MODIFIED", "SHA256")]
    for f in files:
        rows.append((f.path, f.mode, f"{f.tokens:,}", str(f.uses), f"#{f.last_seq}",
                     time.strftime("%Y-%m-%d %H:%M", time.localtime(f.mtime)), f.sha256[:12]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0
