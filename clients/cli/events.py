"""`ctxkeep events`: watch what the daemon publishes, live."""

import argparse
import sys
from itertools import chain

from ...protocol.events import (
    CompactionProgress,
    CompactionRequest,
    CompactionResult,
    ContextUsage,
    DaemonStatusEvent,
    GenerationError,
    GenerationThinking,
    GenerationToken,
    QueryReceived,
    ResponseGeneration,
    SessionCreated,
    SessionUpdated,
)
from .common import add_session_argument, connect, to_json
from .turn_stream import progress_words


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "events", help="print events as they are published",
        description="Print every event the daemon publishes, one per line, until Ctrl-C. "
                    "With --json each line is the event's JSON body. A line `missed N "
                    "events` (stderr) means the subscriber fell behind.")
    add_session_argument(parser, "--session", default=None, help="only this session's events (id or name)")
    parser.add_argument("--subject", default="", help="only subjects starting with this, "
                                                      "e.g. `generation.` or `compaction.`")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    return parser


def describe(event) -> str:
    """A one-line human summary of an event."""
    if isinstance(event, (GenerationToken, GenerationThinking)):
        return repr(event.text)
    if isinstance(event, QueryReceived):
        return f"{event.model} <- {event.message.content[:60]!r}"
    if isinstance(event, ResponseGeneration):
        return (f"{event.token_count:,}/{event.window:,} tokens, {event.eval_count} generated"
                + (" (TRUNCATED by Ollama)" if event.truncated else ""))
    if isinstance(event, GenerationError):
        return f"{event.code}: {event.message}"
    if isinstance(event, ContextUsage):
        u = event.usage
        following = u.next_tokens or u.tokens  # what the next prompt holds, as every gauge shows it
        return f"{'' if u.exact else '~'}{following:,}/{u.window:,} ({following / max(1, u.window):.0%})"
    if isinstance(event, CompactionRequest):
        return (f"by {event.requested_by}: {event.messages} messages, "
                f"{event.tokens_before:,} tokens, {event.calls} call(s)")
    if isinstance(event, CompactionProgress):
        return f"{event.step}/{event.steps} {progress_words(event)}"
    if isinstance(event, CompactionResult):
        return event.marker if event.status == "ok" else f"{event.status}: {event.reason}"
    if isinstance(event, (SessionCreated, SessionUpdated)):
        state = "busy" if event.session.busy else "idle"
        return f"{event.session.name} ({event.session.model}), {state}"
    if isinstance(event, DaemonStatusEvent):
        state = "stopping" if event.stopping else "running"
        ollama = event.status.ollama
        return f"{state}, {event.status.sessions} sessions, ollama " + (
            "reachable" if ollama.reachable else "not checked yet" if not ollama.checked
            else "NOT reachable")
    return ""


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        session_id = client.session(args.session).session.id if args.session else ""
        greeting = client.subscribe("")
        missed = 0
        for event in chain([greeting], (event for _, event in client.events())):
            if client.gaps.missed != missed:
                print(f"ctxkeep: missed {client.gaps.missed - missed} events", file=sys.stderr)
                missed = client.gaps.missed
            tag = type(event).__struct_config__.tag
            if session_id and event.session_id != session_id:
                continue
            if not str(tag).startswith(args.subject):
                continue
            if args.json:
                print(to_json(event), flush=True)
            else:
                print(f"#{event.seq} {tag} {event.session_id or '-'} {describe(event)}", flush=True)
    return 0
