"""`ctxkeep chat`: an interactive conversation with streaming and a context gauge."""

import argparse
import os
import sys

from ...protocol.events import GenerationError, ResponseGeneration
from ..core import CtxkeepError, DaemonUnavailable
from .common import Styles, add_session_argument, connect, gauge, session_line, usage_lines
from .compact import run_compaction
from .lines import Reader, plain_reader, reader
from .new import add_session_options, create_or_choose
from .show import folded, message_lines
from .turn_stream import stream_turn

HELP = """commands:
  /help      this text
  /usage     how full the context window is, by segment
  /retry     a new answer to the last question (the old one stays in history)
  /continue  the model goes on from where its last answer stopped (one cut at its limit): the
             same answer, made longer
  /edit TEXT ask the last question again as TEXT (the old one stays in history);
             /edit alone opens the last question in $EDITOR
  /alt [N]   the answers to the last question; with N, make answer #N the one the model sees
  /compact   summarize older turns to free the window (the history keeps them)
  /pin [N]   pin message N (default: the last answer) so no compaction touches it
  /show N    message N whole (a tool call or result, folded in the chat, in full)
  /goals     the goal record
  /undo      undo the last compaction
  /quit      leave (Ctrl-D works too)
Ctrl-C while an answer streams cancels it; at the prompt it clears the line."""


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "chat", help="talk interactively",
        description="Talk with a session interactively. SESSION that does not exist yet is "
                    "created with that name; without SESSION (and without -c) a new session "
                    "is created (with --name/--model/--system/--num-ctx). Answers stream as "
                    "they are written; after each turn a gauge shows tokens / window. On a "
                    "terminal: line editing, history across runs (Up, Ctrl-R) and Tab "
                    "completion of /commands and @paths.")
    add_session_argument(parser, nargs="?")
    parser.add_argument("-c", "--continue", dest="resume", action="store_true",
                        help="continue the most recently used session")
    add_session_options(parser)
    parser.add_argument("--think", action="store_true", help="show a thinking model's thoughts")
    return parser


COMMANDS = ("/help", "/usage", "/goals", "/undo", "/pin", "/compact", "/retry", "/continue", "/edit", "/alt",
            "/show")


def _command(client, session_id: str, text: str, out, style: Styles) -> None:
    """Run one /command; raises CtxkeepError when the daemon refuses it."""
    name, _, arg = text.partition(" ")
    if name == "/help":
        print(HELP)
    elif name == "/show":
        if not arg.strip().isdigit():
            print("/show N: N is a message's number (#N in `ctxkeep show`)")
            return
        page = client.history(session_id, start=int(arg), limit=1).messages
        if not page or page[0].seq != int(arg):
            print(f"/show: there is no message #{arg.strip()}")
            return
        print("\n".join(message_lines(page[0], full=True)))
    elif name == "/usage":
        print("\n".join(usage_lines(client.usage(session_id).usage)))
    elif name == "/goals":
        from .context import describe_goals
        print(describe_goals(client.goals(session_id).goals))
    elif name == "/undo":
        s = client.restore(session_id).snapshot
        print(f"restored the state {s.reason}")
    elif name == "/pin":
        arg = arg.strip()
        seq = int(arg) if arg.isdigit() else client.session(session_id).session.message_count - 1
        client.pin(session_id, seq)
        print(f"pinned #{seq}")
    elif name == "/alt":
        _alternatives(client, session_id, arg.strip())
    elif name == "/edit":
        print("give the new text: /edit YOUR QUESTION, REWORDED (on a terminal with $EDITOR set, "
              "/edit alone opens the last question in it)")
    elif name == "/compact":
        result = run_compaction(client, session_id, out, requested_by="chat")
        print(result.marker if result.status == "ok" else
              f"{style.red}compaction {result.status}: {result.reason}{style.reset}")
    else:
        print(f"{style.red}unknown command {name}: {', '.join(COMMANDS)} and /quit are known "
              f"(start a message with // to send it with one slash){style.reset}")


def _alternatives(client, session_id: str, arg: str) -> None:
    """/alt: list the last question's answers, or (/alt N) put answer N back."""
    if arg.isdigit():
        client.alternative(session_id, int(arg))
        print(f"answer #{arg} is the one the model sees now")
        return
    count = client.session(session_id).session.message_count
    tail = client.history(session_id, start=max(0, count - 8), limit=8).messages  # as the daemon looks
    answered = [m.reply_to for m in tail if m.role == "assistant" and m.reply_to >= 0]
    if not answered:
        print("no answered question ends the conversation")
        return
    question = answered[-1]
    shown = client.history(session_id, active=True, start=question, limit=2).messages  # [it, its answer]
    seen = shown[-1].seq if len(shown) == 2 and shown[0].seq == question else -1
    for m in client.history(session_id, start=question, limit=100).messages:
        if m.role == "assistant" and m.reply_to == question and m.status == "complete":
            mark = "*" if m.seq == seen else " "
            print(f"{mark} #{m.seq}  {' '.join(m.content.split())[:70]}")


def _redo(client, session_id: str, text: str, args: argparse.Namespace):
    """For /retry and /edit TEXT: the request that asks the last question again (None for
    anything else). /edit without TEXT is left to the other commands, which say so."""
    name, _, rest = text.partition(" ")
    think = True if args.think else None
    if name == "/retry":
        return lambda: client.regenerate(session_id, think=think)
    if name == "/continue":  # the last answer, gone on from where it stopped
        return lambda: client.regenerate(session_id, think=think, continues=True)
    if name == "/edit" and not rest.strip():  # on a terminal: the last question in $EDITOR
        rest = _in_editor(client, session_id) or ""
    if name == "/edit" and rest.strip():  # the last question
        return lambda: client.edit(session_id, None, rest.strip(), cwd=os.getcwd(), think=think)
    return None


def _in_editor(client, session_id: str) -> str | None:
    """The last question as reworded in $VISUAL or $EDITOR (None: no terminal or editor,
    or left as it was)."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not (editor and sys.stdin.isatty()):
        return None
    count = client.session(session_id).session.message_count
    tail = client.history(session_id, start=max(0, count - 8), limit=8).messages
    asked = [m.content for m in tail if m.role == "user" and m.kind == "message"]
    if not asked:
        return None
    import shlex
    import subprocess
    import tempfile
    from pathlib import Path
    descriptor, name = tempfile.mkstemp(suffix=".md", text=True)
    draft = Path(name)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(asked[-1])
        if subprocess.run([*shlex.split(editor), name]).returncode != 0:
            return None
        text = draft.read_text(encoding="utf-8").strip()  # by name: editors often save a new file
    finally:
        draft.unlink(missing_ok=True)
    return text if text and text != asked[-1].strip() else None


def open_session(client, args: argparse.Namespace, ask: Reader | None = None):
    """The session to talk with: the one named (created with that name when none has it),
    the most recent one (-c), or a new one (`ask` picks a model when the default is not
    installed)."""
    if args.session:
        try:
            return client.session(args.session).session
        except CtxkeepError as exc:
            if exc.code != "unknown_session":
                raise
        args.name = args.session
        return create_or_choose(client, args, ask)
    if args.resume:
        recent = client.sessions().sessions
        if recent:
            return recent[0]
    return create_or_choose(client, args, ask)


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    style = Styles(out)
    read = reader([*COMMANDS, "/quit"])
    with connect(args) as client:
        client.subscribe("")
        session = open_session(client, args, plain_reader if sys.stdin.isatty() else None)
        print(f"{style.bold}{session_line(session)}{style.reset}")
        print(f"{style.dim}/help for commands, Ctrl-D to leave{style.reset}")
        while True:
            line = read(f"{style.bold}you>{style.reset} " if out.isatty() else "you> ")
            if line is None or line.strip() in ("/quit", "/exit"):
                return 0
            text = line.strip()
            if not text:
                continue
            redo = _redo(client, session.id, text, args)
            if text.startswith("/") and not text.startswith("//") and redo is None:
                try:
                    _command(client, session.id, text, out, style)
                except DaemonUnavailable:
                    raise
                except CtxkeepError as exc:  # the chat goes on
                    print(f"{style.red}{text.split()[0]}: {exc.message}{style.reset}")
                continue
            if text.startswith("//"):
                line = line.replace("//", "/", 1)
            out.write(f"{style.bold}{session.model}>{style.reset} ")
            out.flush()
            try:
                end = stream_turn(client, session.id, line, out, show_thinking=args.think,
                                  think=True if args.think else None, cwd=os.getcwd(),
                                  on_interrupt=lambda: print(f"{style.dim} [cancelling]{style.reset}", end="", file=out),
                                  notes=out, request=redo)
            except DaemonUnavailable:
                raise
            except CtxkeepError as exc:
                if redo is None:
                    raise
                print(f"\n{style.red}{text.split()[0]}: {exc.message}{style.reset}")  # the chat goes on
                continue
            out.write("\n")
            if isinstance(end, ResponseGeneration) and end.message.tool_calls:  # folded, one line each
                print(f"{style.dim}" + "\n".join(folded(end.message, False)[-len(end.message.tool_calls):])
                      + f"\n(/show {end.message.seq} for all of it){style.reset}")
            if isinstance(end, ResponseGeneration):
                warn = f" {style.red}(Ollama cut the prompt){style.reset}" if end.truncated else ""
                print(f"{style.dim}{gauge(end.next_tokens or end.token_count, end.window)}{style.reset}{warn}")
            elif isinstance(end, GenerationError):
                print(f"{style.red}[{end.code}] {end.message}{style.reset}")
