"""`ctxkeep show`: a session's settings and full history."""

import argparse
import json
import textwrap
from collections.abc import Iterator

import msgspec

from ..errors import CtxkeepError
from .common import (
    Styles,
    add_latest_session_argument,
    connect,
    session_line,
    session_or_latest,
    terminal_width,
    when,
)


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("show", help="a session's full history",
                                 description="Print a session's settings and its full history "
                                             "(every message ever stored, interrupted ones marked, "
                                             "summaries shown where compactions wrote them; under "
                                             "an answer, the earlier messages recall brought into "
                                             "its prompt).")
    add_latest_session_argument(parser)
    parser.add_argument("--active", action="store_true",
                        help="only the active context: the messages the model sees now")
    parser.add_argument("--prompt", action="store_true",
                        help="exactly what the model would see now, part by part (system prompt, goals, "
                             "checkpoints, each message as it is shown), each with its tokens")
    parser.add_argument("--last", type=int, default=0, metavar="N",
                        help="only the last N messages (of the history, or of the active context)")
    parser.add_argument("--full", action="store_true",
                        help="tool results whole (by default each is one line: its start and size)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true",
                       help="one JSON object: the session (its settings) and its messages")
    shown.add_argument("--jsonl", action="store_true", help="one JSON object per message and line")
    return parser


def run(args: argparse.Namespace) -> int:
    import sys
    if args.last < 0:
        raise SystemExit("ctxkeep show: --last takes a number of messages, 1 or more")
    style = Styles(sys.stdout)
    with connect(args) as client:
        session = client.session(session_or_latest(client, args.session)).session
        if args.prompt:
            return show_prompt(client.prompt(session.id), session, args, style)
        if args.json:
            chosen = list(messages(client, session, args.active, args.last))
            print(msgspec.json.encode({"session": session, "messages": chosen}).decode())
            return 0
        if not args.jsonl:
            print(f"{style.bold}{session_line(session)}{style.reset}")
            if args.active:
                print(f"{style.dim}active context (what the model sees){style.reset}")
                print(f"{style.dim}{beside_messages(client.prompt(session.id))}{style.reset}")
            if session.system:
                print(f"system: {session.system}")
        width = min(terminal_width(), 100) - 2
        names: dict[str, str] = {}
        for m in messages(client, session, args.active, args.last):
            if args.jsonl:
                print(msgspec.json.encode(m).decode())
                continue
            mark = f" [interrupted: {m.error}]" if m.status == "interrupted" else (
                " [summary]" if m.kind == "summary" else "")
            if m.alternative_of >= 0:  # a regenerated answer
                mark += f" [alternative to #{m.alternative_of}]"
            if m.done_reason == "length":
                mark += " [cut at its length limit]"
            if m.done_reason == "repeating":
                mark += " [stopped: repeating]"
            if m.format_error:
                mark += f" [not in the format asked: {m.format_error}]"
            print(f"\n{style.bold}{m.role}{style.reset} {style.dim}#{m.seq} {when(m.created)}"
                  f"{mark}{style.reset}")
            if m.recalled:  # what recall brought into the prompt this answered
                print(f"  {style.dim}(its prompt recalled {recalled_list(m.recalled)}){style.reset}")
            if m.recall_cut:
                print(f"  {style.dim}(recall cut: {m.recall_cut}){style.reset}")
            if m.remembered:  # and what memory brought from other sessions
                print(f"  {style.dim}(from other sessions: {remembered_list(client, m.remembered, names)}){style.reset}")
            for line in message_lines(m, args.full):
                print(textwrap.fill(line, width, initial_indent="  ", subsequent_indent="  ")
                      if line else "")
    return 0


def message_lines(m, full: bool) -> list[str]:
    """A message as `show` prints it: its text (a tool exchange folded unless `full`), then
    a line per image it holds."""
    lines = folded(m, full) if (m.tool_calls or m.tool_results) else m.content.splitlines() or [""]
    return lines + [f"[image: {i.name or i.hash[:12]}, {i.media_type}, "
                    f"{f'{i.size:,} bytes' if i.size < 1024 else f'{i.size / 1024:,.0f} KB'}]" for i in m.images]


def folded(m, full: bool) -> list[str]:
    """A tool exchange's lines: an answer's text and one line per call; a tool message one
    line per result (its first line and size), or every line with `full`."""
    if m.tool_results:
        if full:
            return m.content.splitlines()
        return [f"[{r.tool_name}] {(r.content.splitlines() or [''])[0][:80]} "
                f"({len(r.content.splitlines())} lines, {len(r.content):,} characters)" for r in m.tool_results]
    calls = [f"→ calls {c.function.name}({json.dumps(c.function.arguments)})" for c in m.tool_calls]
    return [*m.content.splitlines(), *calls]


def recalled_list(seqs: list[int], most: int = 12) -> str:
    shown = " ".join(f"#{s}" for s in seqs[:most])
    return shown + (f" and {len(seqs) - most} more" if len(seqs) > most else "")


def remembered_list(client, refs: list, names: dict[str, str]) -> str:
    """Memory's sources by session, each session named once: `family #0 #1; work #7`."""
    by_session: dict[str, list[int]] = {}
    for ref in refs:
        by_session.setdefault(ref.session_id, []).append(ref.seq)
    for sid in by_session:
        if sid not in names:
            try:
                names[sid] = client.session(sid).session.name
            except CtxkeepError:  # deleted since: its id is all there is
                names[sid] = f"{sid} (deleted)"
    return "; ".join(f"{names[sid]} {recalled_list(seqs)}" for sid, seqs in by_session.items())


def messages(client, session, active: bool, last: int) -> Iterator:
    """The messages to show, page by page as they arrive. The history's seqs run
    0..count-1 (nothing is ever removed), so its last N start at count - N; the active
    context is in prompt order, so its last N are cut once it is read."""
    start: int | None = max(0, session.message_count - last) if last and not active else 0
    kept: list = []
    while start is not None:
        page = client.history(session.id, start=start, limit=500, active=active)
        if last and active:
            kept = (kept + page.messages)[-last:]
        else:
            yield from page.messages
        start = page.next
    yield from kept


def beside_messages(reply) -> str:
    """What the prompt holds besides the messages `--active` lists, with their tokens."""
    parts = {"system": "the system prompt", "goals": "the goal record", "checkpoints": "checkpoints"}
    held = [f"{parts[p.kind]} ~{p.tokens:,}" for p in reply.parts if p.kind != "message"]
    shorter = [p for p in reply.parts if p.kind == "message" and p.shown != "whole"]
    if shorter:
        held.append(f"{len(shorter)} message{'s' if len(shorter) != 1 else ''} as summaries or shortened "
                    f"~{sum(p.tokens for p in shorter):,}")
    return (f"the prompt: ~{reply.tokens:,} of {reply.window:,} tokens" + (f", with {', '.join(held)}" if held else "")
            + "; `show --prompt` shows each part as sent")


def show_prompt(reply, session, args: argparse.Namespace, style: Styles) -> int:
    """`show --prompt`: the prompt's parts in order, each with its tokens (JSON with --json)."""
    if args.json or args.jsonl:
        print(msgspec.json.encode(reply).decode())
        return 0
    print(f"{style.bold}{session_line(session)}{style.reset}")
    print(f"{style.dim}what the model would see now: ~{reply.tokens:,} of {reply.window:,} tokens, before "
          f"the new message (and the recall block a turn adds for it){style.reset}")
    for part in reply.parts:
        who = part.kind if part.kind != "message" else f"{part.role} #{part.seq}"
        note = "" if part.shown == "whole" else f" ({part.shown})"
        print(f"\n{style.bold}{who}{style.reset}{note} {style.dim}~{part.tokens:,} tokens{style.reset}")
        print(textwrap.indent(part.text, "  "))
    return 0
