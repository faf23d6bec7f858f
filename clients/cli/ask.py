"""`ctxkeep ask`: one turn, the answer on stdout (for scripts and one-off questions)."""

import argparse
import base64
import io
import json
import os
import re
import sys
from pathlib import Path

from ...protocol import encode
from ...protocol.events import GenerationError
from ...protocol.images import ImageInput
from ..core import CtxkeepError
from ..present import chat_models
from .common import add_session_argument, connect, fail
from .turn_stream import stream_turn


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "ask", help="send one message and print the answer",
        description="Send one user turn and stream the answer to stdout. The words may be "
                    "unquoted; when the first one names a session (id, id prefix or name) and "
                    "more follow (words, or text on stdin), the question goes to that session, "
                    "else to the most recently used one (a new one when there is none). Text piped on stdin is added "
                    "after the words (or is the question, with no words or `-`). Exit status 1 "
                    "when the generation fails (the error on stderr).",
        epilog="examples:  ctxkeep ask Why is the sky blue?   ·   ctxkeep ask notes what next?   ·   "
               "git diff | ctxkeep ask --new --model qwen2.5:7b Review this diff")
    parser.add_argument("words", metavar="[SESSION] TEXT", nargs="*", help="the question")
    add_session_argument(parser, "-s", "--session", default="",
                         help="the session (instead of a first word)")
    parser.add_argument("--new", action="store_true", help="ask in a new session")
    parser.add_argument("--model", default="", help="ask in a new session on this model")
    parser.add_argument("--system", default="", help="ask in a new session with this system prompt")
    parser.add_argument("--format", default="", metavar="json|SCHEMA.json",
                        help="ask for the answer as JSON, or as JSON that matches the JSON schema in "
                             "this file; exit status 1 when it does not (the answer is still printed)")
    parser.add_argument("--image", action="append", default=[], metavar="FILE",
                        help="show the model this image (PNG, JPEG, GIF, WebP) with the question; "
                             "repeat for more. A model without vision reads its file name instead")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true",
                       help="print the turn's final event (the answer, or the error) as one JSON object")
    shown.add_argument("--jsonl", action="store_true", help="print every event of the turn as JSON lines")
    return parser


def question(words: list[str], piped: str) -> str:
    """The words, then what was piped on stdin (`-` alone: stdin only)."""
    if words == ["-"]:
        return piped
    text = " ".join(words)
    return f"{text}\n\n{piped}" if text and piped else text or piped


def _create(client, model: str, system: str):
    """A new session; a model Ollama lacks is refused with what `ask` can do about it."""
    try:
        return client.create_session(model=model, system=system).session
    except CtxkeepError as exc:
        if exc.code != "model_not_found":
            raise
        which = f"the model {model!r}" if model else "the default model"
        installed = ", ".join(m.name for m in chat_models(client.models().models)) or "none"
        raise CtxkeepError(exc.code, f"{which} is not installed in Ollama (installed: "
                                     f"{installed}): ask with --model NAME, make one the "
                                     "default (`ctxkeep models default NAME`), or get it "
                                     f"(`ctxkeep models pull {model or 'NAME'}`)") from None


def pick_session(client, args: argparse.Namespace, words: list[str], piped: str
                 ) -> tuple[str, list[str]]:
    """(the session to ask, the words that are the question)."""
    if args.new or args.model or args.system:
        created = _create(client, args.model, args.system)
        print(f"ctxkeep: new session {created.name} ({created.id}) on {created.model}", file=sys.stderr)
        return created.id, words
    if args.session:
        return args.session, words
    if len(words) > 1 or (words and words != ["-"] and piped):  # a question follows the first word
        try:
            return client.session(words[0]).session.id, words[1:]
        except CtxkeepError as exc:
            if exc.code not in ("unknown_session", "ambiguous_session"):
                raise
    latest = client.sessions().sessions
    if latest:  # said (on stderr, beside the answer on stdout): the first word may have meant a session
        named = f"no session is named {words[0]!r}: " if len(words) > 1 and re.fullmatch(r"[\w.:-]+", words[0]) else ""
        print(f"ctxkeep: {named}asked in {latest[0].name}, the most recent session (-s SESSION asks in "
              "another; `ctxkeep sessions` lists them)", file=sys.stderr)
        return latest[0].id, words
    created = _create(client, "", "")
    print(f"ctxkeep: new session {created.name} ({created.id}) on {created.model}", file=sys.stderr)
    return created.id, words


def answer_format(value: str) -> str | dict | None:
    """--format: "json", or the JSON schema the file holds (None: free text). Raises
    ValueError with what to do when the file cannot be used."""
    if not value or value == "json":
        return value or None
    try:
        schema = json.loads(Path(value).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--format {value}: {exc} (give `json`, or a file holding a JSON schema)") from None
    if not isinstance(schema, dict):
        raise ValueError(f"--format {value}: a JSON schema is an object, this file holds a {type(schema).__name__}")
    return schema


def images(files: list[str]) -> list[ImageInput]:
    """--image: each file's bytes, base64, named by the file's name. Raises ValueError."""
    out = []
    for name in files:
        try:
            data = Path(name).read_bytes()
        except OSError as exc:
            raise ValueError(f"--image {name}: {exc.strerror}") from None
        out.append(ImageInput(data=base64.b64encode(data).decode(), name=Path(name).name))
    return out


def run(args: argparse.Namespace) -> int:
    piped = "" if sys.stdin.isatty() else sys.stdin.read().rstrip("\n")
    if not question(args.words, piped).strip() and not args.image:
        return fail("the message is empty: give the question as words, or pipe it on stdin")
    try:
        shape = answer_format(args.format)
        shown = images(args.image)
    except ValueError as exc:
        return fail(str(exc))
    with connect(args) as client:
        session, words = pick_session(client, args, args.words, piped)
        text = question(words, piped)
        if not text.strip() and not shown:
            return fail("the message is empty: give the question after the session")
        client.subscribe("")
        quiet = args.json or args.jsonl
        out = io.StringIO() if quiet else sys.stdout
        each = (lambda event: print(encode(event).decode(), flush=True)) if args.jsonl else None
        end = stream_turn(client, session, text, out, on_event=each,
                          request=lambda: client.send(session, text, cwd=os.getcwd(), format=shape,
                                                      images=shown))
    if args.json:
        print(encode(end).decode())
    elif not args.jsonl:
        sys.stdout.write("\n" if not isinstance(end, GenerationError) or end.partial else "")
    if isinstance(end, GenerationError):
        return fail(f"{end.code}: {end.message}")
    if end.message.format_error:  # type: ignore[attr-defined]
        return fail(f"the answer is not in the format asked for: {end.message.format_error}")  # type: ignore[attr-defined]
    return 0
