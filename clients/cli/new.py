"""`ctxkeep new`: create a session."""

import argparse

import msgspec

from .common import connect, session_line


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
