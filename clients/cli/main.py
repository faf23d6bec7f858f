"""`ctxkeep`: the command-line client of ctxkeepd.

Each command lives in a module of its own; only the module of the command being run is
imported (so `ctxkeep status` pays for no other command's imports). `ctxkeep --help`,
and a command line naming no known command, build every command's parser.
"""

import argparse
import gc
import importlib
import os
import sys

from ...protocol.version import DAEMON_VERSION

#: Set when the shell runs us for completion (argcomplete's protocol).
COMPLETING = "_ARGCOMPLETE" in os.environ

#: Every command: the module that builds its parser, and the builder's name there (the
#: builder sets `run` itself when its module holds more than one command).
COMMANDS: dict[str, tuple[str, str]] = {
    "status": ("status", "add_parser"),
    "models": ("models", "add_parser"),
    "sessions": ("sessions", "add_parser"),
    "new": ("new", "add_parser"),
    "show": ("show", "add_parser"),
    "search": ("search", "add_parser"),
    "memory": ("memory", "add_parser"),
    "export": ("transfer", "add_export"),
    "import": ("transfer", "add_import"),
    "files": ("files", "add_parser"),
    "chat": ("chat", "add_parser"),
    "ask": ("ask", "add_parser"),
    "compact": ("compact", "add_parser"),
    "events": ("events", "add_parser"),
    "daemon": ("daemon", "add_parser"),
    "set": ("manage", "add_set"),
    "rename": ("manage", "add_rename"),
    "branch": ("branch", "add_parser"),
    "delete": ("manage", "add_delete"),
    "cancel": ("manage", "add_cancel"),
    "goals": ("context", "add_goals"),
    "pin": ("context", "add_pin"),
    "snapshot": ("context", "add_snapshot"),
    "undo": ("context", "add_undo"),
    "config": ("admin", "add_config"),
    "keys": ("admin", "add_keys"),
    "completion": ("completion", "add_parser"),
}


def _add(commands, name: str) -> None:
    from .common import add_endpoint_options
    module_name, builder = COMMANDS[name]
    module = importlib.import_module(f"{__package__}.{module_name}")
    parser = getattr(module, builder)(commands)
    if builder == "add_parser":
        parser.set_defaults(run=module.run)
    add_endpoint_options(parser)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that command's subparser is built."""
    parser = argparse.ArgumentParser(
        prog="ctxkeep",
        description="Talk to local Ollama models through ctxkeepd, which keeps each "
                    "conversation inside the model's context window.",
        epilog="Run `ctxkeep COMMAND --help` for a command's options.")
    parser.add_argument("--version", action="version", version=f"ctxkeep {DAEMON_VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in [only] if only else COMMANDS:
        _add(commands, name)
    return parser


def command_in(argv: list[str]) -> str | None:
    """The command an argument list names, if it names a known one first."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    if COMPLETING:  # the shell asks what may come next: every command's parser, then exit
        import argcomplete
        argcomplete.autocomplete(build_parser())
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_in(argv)).parse_args(argv)
    # What is loaded by now lives until the process ends: keep it out of every garbage
    # collection, the one at exit included (which took a fifth of `ctxkeep status`).
    gc.freeze()
    from ..core import CtxkeepError
    from .common import fail
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
