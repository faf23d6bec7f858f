"""Helpers every command uses: connecting, formatting, the gauge (a turn as it streams:
turn_stream.py)."""

import argparse
import os
import shutil
import sys
import time
from typing import TextIO

import msgspec

from ...protocol.structs import SessionInfo, Usage
from ..core import CtxkeepError
from ..sync import Client


def add_endpoint_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--control", help="control endpoint (default: $CTXKEEP_CONTROL or "
                                          "ipc://$XDG_RUNTIME_DIR/ctxkeep/ctl)")
    parser.add_argument("--events-endpoint", dest="events_endpoint",
                        help="event endpoint (default: $CTXKEEP_EVENTS or "
                             "ipc://$XDG_RUNTIME_DIR/ctxkeep/events)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for the daemon (default: 10)")


def add_session_argument(parser: argparse.ArgumentParser, *flags: str, **how) -> argparse.Action:
    """The SESSION argument (positional, or an option with `flags`); the shell completes it
    with the daemon's session names (argcomplete reads the action's `completer`)."""
    how = {"metavar": "SESSION", "help": "session id or name", **how}
    action = parser.add_argument(*(flags or ("session",)), **how)
    action.completer = session_names  # type: ignore[attr-defined]
    return action


def add_latest_session_argument(parser: argparse.ArgumentParser) -> argparse.Action:
    """SESSION, optional: without it, the most recently used session (as `ask` takes it)."""
    return add_session_argument(parser, nargs="?", default="",
                                help="session id or name (default: the most recently used)")


def session_or_latest(client: Client, ref: str) -> str:
    """The session `ref` names, or the most recently used one; raises CtxkeepError when
    there is none."""
    if ref:
        return ref
    latest = client.sessions().sessions
    if not latest:
        raise CtxkeepError("unknown_session", "there are no sessions yet: start one with "
                                              "`ctxkeep ask QUESTION` or `ctxkeep chat`")
    return latest[0].id


def session_names(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
    """Session names for completion, asked of the daemon (none when it does not answer)."""
    try:
        with connect(argparse.Namespace(**{**vars(parsed_args), "timeout": 0.5})) as client:
            return [s.name for s in client.sessions().sessions if s.name.startswith(prefix)]
    except Exception:  # completion must never fail loudly
        return []


def connect(args: argparse.Namespace) -> Client:
    return Client(args.control, args.events_endpoint, timeout=args.timeout)


def fail(message: str) -> int:
    """Print an error to stderr; the exit status for errors."""
    print(f"ctxkeep: {message}", file=sys.stderr)
    return 1


def tokens(n: int, exact: bool = True) -> str:
    return f"{n:,}" if exact else f"~{n:,}"


def gauge(count: int, window: int, exact: bool = True, width: int = 20) -> str:
    """`[████░░░░] 1,234 / 8,192 tokens (15%)`; `~` marks an estimate."""
    fill = count / window if window else 0.0
    done = min(width, round(fill * width))
    bar = "█" * done + "░" * (width - done)
    return f"[{bar}] {tokens(count, exact)} / {window:,} tokens ({fill:.0%})"


def when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def session_line(s: SessionInfo) -> str:
    plural = "" if s.compactions == 1 else "s"
    extra = f" · {s.compactions} compaction{plural} · reliability {s.reliability:.0%}" if s.compactions else ""
    cache = f" · {s.cache_hit_rate:.0%} from the model's cache" if s.cache_hit_rate is not None else ""
    return (f"{s.name} ({s.id}) · {s.model} · {s.message_count} message{'' if s.message_count == 1 else 's'} · "
            f"{tokens(s.next_tokens or s.token_count, s.token_count_exact)} / {s.window:,} tokens{extra}{cache}")


def usage_lines(u: Usage) -> list[str]:
    """The gauge and the split by segment."""
    seg = u.segments
    following = u.next_tokens or u.tokens  # what the next prompt holds: the answer in, the recall block out
    answer = max(0, following - (u.tokens - seg.recalled))
    parts = [("system", seg.system), ("goals & pins", seg.pinned), ("files", seg.files),
             ("summaries", seg.summaries), ("messages", seg.recent + answer),
             ("recalled (last prompt)" if answer else "recalled", seg.recalled)]
    width = max(len(name) for name, _ in parts)
    lines = [gauge(following, u.window, u.exact)]
    lines += [f"  {name.ljust(width)}  {tokens(n, u.exact).rjust(9)}" for name, n in parts]
    lines.append(f"  {'active msgs'.ljust(width)}  {u.messages:>9}")
    lines.append(budget_line(u))
    lines.append(cache_line(u))
    lines.append(f"reliability {u.reliability:.0%}" + (
        " — low: a small model may lose track of a compacted conversation; consider a new "
        "conversation or a larger model" if u.reliability < 0.40 else ""))
    return lines


def budget_line(u: Usage) -> str:
    """The conversation's budget and how much of it is used; past it, by how many tokens (a
    share in the thousands of percent says nothing)."""
    if u.budget_fill <= 1:
        return f"conversation budget {u.budget:,} tokens, {u.budget_fill:.0%} used"
    over = round(u.budget * (u.budget_fill - 1))
    return (f"conversation budget {u.budget:,} tokens: over it by ~{over:,} (the next turn compacts, "
            "or `ctxkeep compact` now)")


def cache_line(u: Usage) -> str:
    """What the model server's prompt cache served: a turn reads only what it did not hold."""
    if u.cache_hit_rate is None:
        return "prompt cache: the model server has not said what it served"
    last = f"{u.cached_tokens:,} of the last prompt's {u.tokens:,} tokens, " if u.cached_tokens is not None else ""
    return f"prompt cache: {last}{u.cache_hit_rate:.0%} of all prompt tokens served from it"


def to_json(event: msgspec.Struct) -> str:
    return msgspec.json.encode(event).decode()


class Styles:
    """ANSI styles, only on a terminal that takes them: none with NO_COLOR set
    (no-color.org) or TERM=dumb."""

    def __init__(self, stream: TextIO) -> None:
        on = stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.dim = "\033[2m" if on else ""
        self.bold = "\033[1m" if on else ""
        self.red = "\033[31m" if on else ""
        self.reset = "\033[0m" if on else ""


def terminal_width() -> int:
    return shutil.get_terminal_size((80, 24)).columns


__all__ = ["CtxkeepError", "add_endpoint_options", "connect", "fail", "gauge"]
