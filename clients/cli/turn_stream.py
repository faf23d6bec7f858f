"""One turn as `ask` and `chat` show it: send (Ctrl-C held until it is accepted), then the
turn's events as they come: the answer streaming, thinking when asked for, what it waits
for, a compaction before it, and its end."""

import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO, TypeVar

from ...protocol.events import (
    CompactionProgress,
    CompactionRequest,
    CompactionResult,
    ContextWarning,
    Event,
    GenerationError,
    GenerationRecalled,
    GenerationThinking,
    GenerationToken,
    GenerationWaiting,
    ResponseGeneration,
)
from ...protocol.replies import Accepted
from ..core import CtxkeepError, DaemonUnavailable
from ..sync import Client
from .common import Styles

T = TypeVar("T")


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
    with keys_unechoed():
        return _stream_turn(client, session, text, out, show_thinking, cwd, think, on_interrupt, notes, on_event,
                            request)


@contextmanager
def keys_unechoed() -> Iterator[None]:
    """While an answer streams on a terminal, what the user types is not echoed into it
    (it is still read, by the next prompt)."""
    if not sys.stdin.isatty():
        yield
        return
    import termios
    fd = sys.stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _stream_turn(client: Client, session: str, text: str, out: TextIO, show_thinking: bool, cwd: str,
                 think: bool | None, on_interrupt: Callable[[], None] | None, notes: TextIO | None,
                 on_event: Callable[[Event], None] | None, request: Callable[[], Accepted] | None) -> Event:
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

    def each(event: Event) -> None:
        if on_event is not None and getattr(event, "generation_id", None) == gen:
            on_event(event)
        _show(event, accepted, out, style, notes, show_thinking, shown)
    while True:
        try:  # Ctrl-C anywhere while the answer streams (waiting or printing) cancels it
            end = _reported(accepted, lambda: client.follow(gen, each, session=accepted.session_id))
            break
        except KeyboardInterrupt:
            client.cancel(session, gen)
            if on_interrupt:
                on_interrupt()
    _after_answer(client, accepted, out, style, notes, shown)
    return end


def _after_answer(client: Client, accepted: Accepted, out: TextIO, style: "Styles", notes: TextIO,
                  shown: dict[str, bool]) -> None:
    """Until the session is idle again: a compaction after the answer shows while it runs
    (its step and the time left), and Ctrl-C stops it (the context as it was before it)."""
    def each(event: Event) -> None:
        if isinstance(event, CompactionResult) and event.status != "ok" and event.reason == "cancelled":
            _waiting_line(notes, style, shown, "")
            print(f"{style.dim}[compaction stopped: the context is as it was]{style.reset}", file=notes, flush=True)
        else:
            _show(event, accepted, out, style, notes, False, shown)
    while True:
        try:
            _reported(accepted, lambda: client.settle(accepted.session_id, each))
            break
        except KeyboardInterrupt:
            client.cancel(accepted.session_id)
    _waiting_line(notes, style, shown, "")


def _reported(accepted: Accepted, wait: Callable[[], T]) -> T:
    """`wait()`; a daemon that stops meanwhile is reported with what became of the question
    (accepted, so stored: never lost)."""
    try:
        return wait()
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


def progress_words(event: CompactionProgress) -> str:
    """"summarizing 3 part(s) with gemma3:270m, ~40 s" / "summary 1 of 4 written, ~30 s left"."""
    what = event.detail if event.step == 0 else f"summary {event.step} of {event.steps} written"
    if event.expected_s is None or event.expected_s < 1:
        return what
    return f"{what}, ~{event.expected_s:,.0f} s" + (" left" if event.step else "")


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
        _waiting_line(notes, style, shown, f"[compacting: {progress_words(event)}…]")
        return None
    if isinstance(event, CompactionResult) and event.session_id == accepted.session_id \
            and event.status == "ok" and event.level:
        _waiting_line(notes, style, shown, "")
        print(f"{style.dim}{event.marker}{style.reset}", file=notes, flush=True)
        return None
    if getattr(event, "generation_id", None) != accepted.generation_id:
        return None
    if isinstance(event, GenerationWaiting):
        # the seconds first: on a narrow terminal the line is cut at its end
        _waiting_line(notes, style, shown, f"[waiting {event.waited:.0f} s: {event.message}]")
        return None
    if isinstance(event, GenerationRecalled):
        if event.cut:  # never silently less than recall found
            print(f"{style.dim}[recall cut: {event.cut}]{style.reset}", file=notes, flush=True)
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
        if isinstance(event, ResponseGeneration) and event.message.done_reason == "repeating":
            print(f"\n{style.dim}[stopped: repeating — the answer said the same words over and over; "
                  f"`repetition_stop` in config.toml sets when]{style.reset}", file=notes, flush=True)
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
    width = shutil.get_terminal_size().columns - 1  # a line that wraps could not be redrawn in place
    text = text if len(text) <= width else text[:max(0, width - 1)] + "…"
    stream.write(("\0338\033[K" if shown.get("waiting") else "\0337") +
                 (f"{style.dim}{text}{style.reset}" if text else ""))
    stream.flush()
    shown["waiting"] = bool(text)
