"""Helpers every command uses: connecting, formatting, the gauge, streaming a turn."""

import argparse
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

import msgspec

from ...protocol.events import (
    CompactionProgress, CompactionRequest, CompactionResult, ContextWarning, Event, GenerationError,
    GenerationThinking,
    GenerationToken, GenerationWaiting, ResponseGeneration,
)
from ...protocol.structs import SessionInfo, Usage
from ...protocol.replies import Accepted
from ..core import CtxkeepError, DaemonUnavailable
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
    except Exception:  # noqa: BLE001 - completion must never fail loudly
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
    lines.append(f"conversation budget {u.budget:,} tokens, {u.budget_fill:.0%} used")
    lines.append(cache_line(u))
    lines.append(f"reliability {u.reliability:.0%}" + (
        " — low: a small model may lose track of a compacted conversation; consider a new "
        "conversation or a larger model" if u.reliability < 0.40 else ""))
    return lines


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


def stream_turn(client: Client, session: str, text: str, out: TextIO,
                show_thinking: bool = False, cwd: str = "", think: bool | None = None,
                on_interrupt: Callable[[], None] | None = None,
                notes: TextIO | None = None,
                on_event: Callable[[Event], None] | None = None,
                request: Callable[[], Accepted] | None = None) -> Event:
    """Send a turn (or make the request `request` makes: a regenerate, an edit) and print
    its answer as it streams; returns the terminal event.

    The caller must have subscribed. Ctrl-C cancels the generation (the
    daemon then ends it with generation.error `cancelled`) instead of exiting.
    What the @file references attached, and which could not be read, goes to
    `notes` (default: stderr).
    """
    style = Styles(out)
    notes = notes or sys.stderr
    accepted, interrupted = _send_holding_ctrl_c(
        request or (lambda: client.send(session, text, cwd=cwd, think=think)))
    if interrupted:  # Ctrl-C before the daemon said which generation: cancel it now
        client.cancel(session, accepted.generation_id)
        if on_interrupt:
            on_interrupt()
    for f in accepted.files:
        if not f.error:
            print(f"{style.dim}attached {f.path} ({f.mode}, ~{f.tokens:,} tokens){style.reset}",
                  file=notes, flush=True)
    for warning in accepted.warnings:
        print(f"ctxkeep: warning: {warning}", file=notes, flush=True)
    gen = accepted.generation_id
    shown = {"thinking": False}
    while True:
        try:  # Ctrl-C anywhere while the answer streams (waiting or printing) cancels it
            _, event = _next_event(client, accepted)
            if on_event is not None and getattr(event, "generation_id", None) == gen:
                on_event(event)
            end = _show(event, accepted, out, style, notes, show_thinking, shown)
        except KeyboardInterrupt:
            client.cancel(session, gen)
            if on_interrupt:
                on_interrupt()
            continue
        if end is not None:
            return end


def _next_event(client: Client, accepted: Accepted) -> tuple[str, Event]:
    """The next event; a daemon that stops meanwhile is reported with what became of the
    question (accepted, so stored: never lost)."""
    try:
        return client.wait_event()
    except DaemonUnavailable as exc:
        raise CtxkeepError(exc.code, f"{exc.message}. Your message was accepted and is stored in "
                                     f"the session ({accepted.session_id}); ctxkeepd stopped before "
                                     "answering it, and marks it interrupted when it starts again: "
                                     "send it again then") from None


def _send_holding_ctrl_c(send: Callable[[], Accepted]) -> tuple[Accepted, bool]:
    """Send the turn with Ctrl-C held back until `accepted` is in (then it can cancel the
    generation it names): (the reply, whether Ctrl-C was pressed meanwhile)."""
    pressed: list[bool] = []
    # Only where Ctrl-C would raise KeyboardInterrupt: not off the main thread, not where
    # SIGINT is ignored (a background job) or handled by the program itself.
    held = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if held:
        signal.signal(signal.SIGINT, lambda *_: pressed.append(True))
    try:
        accepted = send()
    finally:
        if held:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    return accepted, bool(pressed)


def _show(event: Event, accepted: Accepted, out: TextIO, style: "Styles", notes: TextIO,
          show_thinking: bool, shown: dict[str, bool]) -> Event | None:
    """Print what `event` adds to the turn; the terminal event of the turn is returned."""
    if isinstance(event, ContextWarning) and event.session_id == accepted.session_id:
        print(f"\nctxkeep: warning: {event.message}", file=notes, flush=True)
        return None
    if isinstance(event, CompactionRequest) and event.session_id == accepted.session_id and event.level:
        _waiting_line(notes, style, shown, f"[compacting: level {event.level}, {event.messages:,} messages, "
                                          f"{event.tokens_before:,} tokens…]")
        return None
    if isinstance(event, CompactionProgress) and event.session_id == accepted.session_id:
        _waiting_line(notes, style, shown, f"[compacting: summary {event.step} of {event.steps} written…]")
        return None
    if isinstance(event, CompactionResult) and event.session_id == accepted.session_id \
            and event.status == "ok" and event.level:
        _waiting_line(notes, style, shown, "")
        print(f"{style.dim}{event.marker}{style.reset}", file=notes, flush=True)
        return None
    if getattr(event, "generation_id", None) != accepted.generation_id:
        return None
    if isinstance(event, GenerationWaiting):
        _waiting_line(notes, style, shown, f"[waiting: {event.message} · {event.waited:.0f} s]")
        return None
    _waiting_line(notes, style, shown, "")  # the first token (or the end) clears it
    if isinstance(event, GenerationThinking) and show_thinking:
        out.write(f"{style.dim}{event.text}")
        shown["thinking"] = True
    elif isinstance(event, GenerationToken):
        if shown["thinking"]:
            out.write(f"{style.reset}\n")
            shown["thinking"] = False
        out.write(event.text)
    elif isinstance(event, (ResponseGeneration, GenerationError)):
        if shown["thinking"]:
            out.write(style.reset)
        out.flush()
        if isinstance(event, ResponseGeneration) and event.message.done_reason == "length":
            print(f"\n{style.dim}[the answer reached its limit (answer_max_share of the window, or the "
                  f"session's num_predict): /continue in `ctxkeep chat` asks it to go on]{style.reset}",
                  file=notes, flush=True)
        return event
    out.flush()
    return None


def _waiting_line(stream: TextIO, style: "Styles", shown: dict[str, bool], text: str) -> None:
    """On a colour terminal, a status line in place (the cursor saved where it starts, so
    each update and its clearing rewrite only it); elsewhere (piped, NO_COLOR, TERM=dumb)
    each update as a plain line of its own: no colour is not no information."""
    if not style.dim or not stream.isatty():
        if text:
            print(f"ctxkeep: {text.strip('[]')}", file=stream, flush=True)
        return
    if not (text or shown.get("waiting")):
        return
    stream.write(("\0338\033[K" if shown.get("waiting") else "\0337") +
                 (f"{style.dim}{text}{style.reset}" if text else ""))
    stream.flush()
    shown["waiting"] = bool(text)


def terminal_width() -> int:
    return shutil.get_terminal_size((80, 24)).columns


__all__ = ["CtxkeepError", "add_endpoint_options", "connect", "fail", "gauge", "stream_turn"]
