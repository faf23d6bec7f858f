"""`ctxkeep sessions`: list sessions."""

import argparse

import msgspec

from .common import connect, tokens, when


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("sessions", help="list sessions",
                                 description="List sessions, most recently used first.")
    parser.add_argument("--json", action="store_true", help="one JSON object per session and line")
    return parser


def memory_setting(s) -> str:
    """A session's memory as the list shows it: forgotten (memory never recalls it), its
    own setting (all, none, private), or the daemon's default."""
    if not s.remembered:
        return "forgotten"
    return s.memory or "default"


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        sessions = client.sessions().sessions
    if args.json:
        for s in sessions:
            print(msgspec.json.encode(s).decode())
        return 0
    if not sessions:
        print("no sessions yet: start one with `ctxkeep chat` or `ctxkeep new`")
        return 0
    names = {s.id: s.name for s in sessions}
    branches = any(s.branched_from for s in sessions)
    rows = [("ID", "NAME", "MODEL", "MSGS", "TOKENS", "MEMORY", "UPDATED") + (("BRANCH OF",) if branches else ())]
    for s in sessions:
        fill = f"{tokens(s.next_tokens or s.token_count, s.token_count_exact)}/{s.window:,}"
        row: tuple[str, ...] = (s.id, s.name, s.model, str(s.message_count), fill, memory_setting(s), when(s.updated))
        if branches:
            source = names.get(s.branched_from, f"{s.branched_from} (deleted)") if s.branched_from else ""
            row += (f"{source} @{s.branched_at}" if source else "",)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0
