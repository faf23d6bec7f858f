"""`ctxkeep`: the command-line client of ctxkeepd."""

import argparse
import sys

from ...protocol import DAEMON_VERSION
from ..core import CtxkeepError
from . import admin, ask, chat, compact, context, daemon, events, files, manage, new, sessions, show, status
from .common import add_endpoint_options, fail

#: Modules with add_parser() and run().
COMMANDS = (status, sessions, new, show, files, chat, ask, compact, events, daemon)
#: Parser builders that set their own `run`.
MORE = (manage.add_set, manage.add_rename, manage.add_delete, manage.add_cancel, context.add_goals,
        context.add_pin, context.add_snapshot, context.add_undo, admin.add_config, admin.add_keys)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxkeep",
        description="Talk to local Ollama models through ctxkeepd, which keeps each "
                    "conversation inside the model's context window.",
        epilog="Run `ctxkeep COMMAND --help` for a command's options.")
    parser.add_argument("--version", action="version", version=f"ctxkeep {DAEMON_VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        sub = module.add_parser(commands)
        add_endpoint_options(sub)
        sub.set_defaults(run=module.run)
    for add in MORE:
        add_endpoint_options(add(commands))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CtxkeepError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
