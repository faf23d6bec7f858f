"""`ctxkeep new`: create a session."""

import argparse

import msgspec

from ..core import CtxkeepError
from ..present import chat_models
from .common import connect, session_line
from .lines import Reader


def add_session_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="", help="a unique name (default: chat-N)")
    parser.add_argument("--model", default="", help="the Ollama model (default: the daemon's)")
    parser.add_argument("--system", default="", help="the system prompt")
    parser.add_argument("--num-ctx", type=int, default=None,
                        help="context window in tokens (default: the daemon's, 8192)")
    parser.add_argument("--force", action="store_true",
                        help="use --model even if Ollama does not have it (yet)")


def create(client, args: argparse.Namespace):
    return client.create_session(name=args.name, model=args.model, system=args.system,
                                 num_ctx=args.num_ctx, force=args.force).session


def create_or_choose(client, args: argparse.Namespace, ask: Reader | None):
    """`create`; when it names no model and the default is not installed, the user picks
    one of the installed models (`ask`: None off a terminal, where the error stands) and
    may make it the default."""
    try:
        return create(client, args)
    except CtxkeepError as exc:
        if exc.code != "model_not_found" or args.model or ask is None:
            raise
    installed = chat_models(client.models().models)
    if not installed:
        raise SystemExit("ctxkeep: Ollama has no models yet: pull one (`ctxkeep models pull "
                         "qwen2.5:7b`, or pick another at https://ollama.com/library), then "
                         "run this again")
    default = client.status().status.default_model
    print(f"The default model, {default}, is not installed. Ollama has:")
    for i, m in enumerate(installed, 1):
        context = f", {m.context_length:,} tokens of context" if m.context_length else ""
        print(f"  {i}. {m.name} ({m.parameter_size or '?'} parameters{context})")
    while True:
        answer = ask(f"model for this session [1-{len(installed)}, Enter = 1]: ")
        if answer is None:
            raise SystemExit(1)
        answer = answer.strip() or "1"
        if answer.isdigit() and 1 <= int(answer) <= len(installed):
            args.model = installed[int(answer) - 1].name
            break
        named = [m.name for m in installed if m.name == answer]
        if named:
            args.model = named[0]
            break
        print(f"type a number from 1 to {len(installed)}, or a name from the list")
    again = ask(f"make {args.model} the default for new sessions? [Y/n] ")
    if again is not None and again.strip().lower() in ("", "y", "yes"):
        reply = client.set_default_model(args.model)
        print(f"new sessions now use {reply.model} (`ctxkeep models default NAME` changes it)")
    return create(client, args)


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("new", help="create a session",
                                 description="Create a session and print its id.")
    add_session_options(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the id")
    parser.add_argument("--json", action="store_true", help="print the session as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        session = create(client, args)
    print(msgspec.json.encode(session).decode() if args.json else
          session.id if args.quiet else f"created {session_line(session)}")
    return 0
