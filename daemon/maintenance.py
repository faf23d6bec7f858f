"""The maintenance subcommands of `ctxkeepd`: backup, keys, config, check.

They work on the daemon's own files, so `ctxkeep daemon backup`, `ctxkeep keys` and
`ctxkeep config show` run them as a separate program (`ctxkeepd backup …`): the
client never imports the daemon's code.
"""

import argparse
import sys
from pathlib import Path

from ctxkeep.daemon.config import ConfigError, load, show
from ctxkeep.daemon.config.doc import render_markdown


def add_tools(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the maintenance subcommands to `ctxkeepd`'s parser."""
    backup = commands.add_parser(
        "backup", help="a consistent copy of the store, while the daemon runs",
        description="Copy the store (one read transaction, compacted) into DEST, a new or "
                    "empty folder. To restore: stop the daemon, put the copy's data.mdb in "
                    "place of the store's, start the daemon.")
    backup.add_argument("dest", type=Path, help="a new or empty folder")
    backup.set_defaults(tool=run_backup)

    keys = commands.add_parser(
        "keys", help="CURVE keys for remote (TCP) clients",
        description="show: the daemon's public key and the authorized client keys; "
                    "add KEY [NAME]: admit a client; remove KEY: stop admitting it. A key that "
                    "begins with '-' goes after '--': `ctxkeepd keys add -- KEY NAME`.")
    keys.add_argument("action", nargs="?", default="show", choices=["show", "add", "remove"])
    keys.add_argument("key", nargs="?", help="a client's public key (add, remove)")
    keys.add_argument("name", nargs="*", help="a name for it (add)")
    keys.set_defaults(tool=run_keys)

    config = commands.add_parser(
        "config", help="the effective configuration, or its reference",
        description="show: every setting with its value and where it comes from (the file, "
                    "the environment, the default); doc: the reference as Markdown "
                    "(docs/config.md).")
    config.add_argument("action", choices=["show", "doc"])
    config.set_defaults(tool=run_config)

    check = commands.add_parser(
        "check", help="check a store's invariants (read-only)",
        description="Read a store without changing it and list every broken invariant: "
                    "names, contiguous sequence numbers, counts, and that the active context, "
                    "pins and pending lists name stored messages. Exit 1 when any is found.")
    check.add_argument("store", type=Path, help="the store folder (holding data.mdb)")
    check.add_argument("--settled", action="store_true",
                       help="also require that no question is pending or unanswered")
    check.set_defaults(tool=run_check)


def _fail(message: str, code: int = 1) -> int:
    print(f"ctxkeepd: {message}", file=sys.stderr)
    return code


def run_backup(args: argparse.Namespace) -> int:
    import lmdb

    from ctxkeep.daemon.store.backup import backup
    try:
        copy = backup(load(args.config).resolved_store(), args.dest)
    except (ConfigError, OSError, lmdb.Error) as exc:
        return _fail(f"backup failed: {exc}")
    print(f"backed up to {copy} ({copy.stat().st_size:,} bytes)")
    return 0


def run_keys(args: argparse.Namespace) -> int:
    from ctxkeep.daemon.transports.zmq import curve
    try:
        folder = load(args.config).resolved_curve_dir()
    except ConfigError as exc:
        return _fail(str(exc), 2)
    if args.action != "show" and not args.key:
        return _fail(f"`keys {args.action}` needs a KEY", 2)
    try:
        if args.action == "add":
            curve.add(folder, args.key, " ".join(args.name))
            print(f"authorized {args.key}")
        elif args.action == "remove":
            print("removed" if curve.remove(folder, args.key) else f"{args.key} was not authorized")
        else:
            print(curve.describe(folder))
    except (curve.CurveError, ValueError) as exc:
        return _fail(str(exc))
    return 0


def run_config(args: argparse.Namespace) -> int:
    if args.action == "doc":
        print(render_markdown(), end="")
        return 0
    try:
        print(show(args.config))
    except ConfigError as exc:
        return _fail(str(exc), 2)
    return 0


def run_check(args: argparse.Namespace) -> int:
    import lmdb

    from ctxkeep.daemon.store.check import check
    if not (args.store / "data.mdb").is_file():
        return _fail(f"no store at {args.store} (the folder holding data.mdb)", 2)
    try:
        problems = check(args.store, args.settled)
    except lmdb.Error as exc:
        return _fail(f"cannot read the store at {args.store}: {exc}")
    for line in problems:
        print(line)
    if not problems:
        print(f"{args.store}: no problems found")
    return 1 if problems else 0
