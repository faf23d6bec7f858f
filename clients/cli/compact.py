"""`ctxkeep compact`: summarize a session's older turns to free its context window."""

import argparse
import sys
from typing import TextIO

import msgspec

from ...protocol.events import CompactionProgress, CompactionRequest, CompactionResult
from ...protocol.replies import CompactionPlan
from ..sync import Client
from .common import Styles, add_session_argument, connect


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "compact", help="summarize older turns to free the context window",
        description="Summarize all but the last turns of SESSION into one summary message "
                    "(the model sees the summary and the verbatim tail; the full history is "
                    "kept). Prints progress and the result. Exit status 1 when it fails.")
    add_session_argument(parser)
    parser.add_argument("--tail", type=int, default=None, metavar="N",
                        help="turns kept verbatim (default: the daemon's, 4)")
    parser.add_argument("--instructions", default="",
                        help="extra instructions for the summary, e.g. 'keep all file names'")
    parser.add_argument("--dry-run", action="store_true",
                        help="show what would be summarized and freed; change nothing")
    parser.add_argument("--json", action="store_true",
                        help="print the result (or, with --dry-run, the plan) as one JSON object")
    return parser


def describe_plan(plan: CompactionPlan) -> str:
    if plan.skip_reason:
        return plan.skip_reason
    tilde = "" if plan.tokens_before_exact else "~"
    return (f"would summarize {len(plan.summarize)} messages (~{plan.tokens_summarized:,} tokens) "
            f"with {plan.model} in {plan.calls} call(s), keeping {len(plan.keep)} verbatim\n"
            f"projected: {tilde}{plan.tokens_before:,} → ~{plan.tokens_after:,} tokens "
            f"(~{plan.tokens_freed:,} freed)")


def run_compaction(client: Client, session: str, out: TextIO, tail: int | None = None,
                   instructions: str = "", requested_by: str = "cli") -> CompactionResult:
    """Start a compaction and print its progress until its result (the caller subscribed)."""
    style = Styles(out)
    accepted = client.compact(session, tail_turns=tail, instructions=instructions,
                              requested_by=requested_by)
    if accepted.ahead:
        print(f"{style.dim}waiting for {accepted.ahead} job(s) of this session…{style.reset}", file=out)
    while True:
        _, event = client.wait_event()
        if getattr(event, "compaction_id", None) != accepted.compaction_id:
            continue
        if isinstance(event, CompactionRequest):
            print(f"{style.dim}compacting: summarizing {event.messages} messages of "
                  f"{event.tokens_before:,} tokens in {event.calls} call(s)…{style.reset}",
                  file=out, flush=True)
        elif isinstance(event, CompactionProgress):
            left = f" (~{event.expected_s:,.0f} s {'left' if event.step else 'in all'})" \
                if event.expected_s is not None and event.expected_s >= 1 else ""
            print(f"{style.dim}  {event.step}/{event.steps} {event.detail}{left}{style.reset}",
                  file=out, flush=True)
        elif isinstance(event, CompactionResult):
            return event


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        if args.dry_run:
            plan = client.compaction_plan(args.session, tail_turns=args.tail)
            print(msgspec.json.encode(plan).decode() if args.json else describe_plan(plan))
            return 0
        client.subscribe("")
        result = run_compaction(client, args.session, sys.stderr if args.json else sys.stdout,
                                args.tail, args.instructions)
    if args.json:
        print(msgspec.json.encode(result).decode())
        return 1 if result.status == "failed" else 0
    if result.status == "ok":
        print(result.marker)
        return 0
    if result.status == "skipped":
        print(f"skipped: {result.reason}")
        return 0
    print(f"ctxkeep: compaction failed: {result.reason}", file=sys.stderr)
    return 1
