"""`ctxkeep models`: the models Ollama has, as the daemon sees them."""

import argparse
import sys

import msgspec

from ...protocol.events import ModelPullProgress, ModelPullResult
from ..present import size
from .common import connect


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "models", help="the models installed in Ollama, or pull one",
        description="List the models Ollama has: size on disk, parameters, the most context "
                    "each takes, whether it is loaded now; * marks the default for new sessions. "
                    "`ctxkeep models pull NAME` has Ollama download NAME, with progress. "
                    "`ctxkeep models default NAME` makes NAME the default (the daemon records "
                    "it as default_model in its config.toml); without NAME it prints the default.")
    parser.add_argument("action", nargs="?", choices=["list", "pull", "default"], default="list")
    parser.add_argument("name", nargs="?", metavar="NAME", help="the model to pull, or the new default")
    parser.add_argument("--force", action="store_true",
                        help="default: make NAME the default even if Ollama does not have it (yet)")
    parser.add_argument("--json", action="store_true",
                        help="print the list as JSON (pull: every event as a JSON line)")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.action == "pull":
        if not args.name:
            raise SystemExit("ctxkeep models pull: name the model, e.g. `ctxkeep models pull qwen2.5:7b`")
        return pull(args)
    if args.action == "default":
        return default(args)
    if args.name:
        raise SystemExit(f"ctxkeep models: {args.name!r} is not an action (list, pull, default)")
    with connect(args) as client:
        reply = client.models()
    if args.json:
        print(msgspec.json.encode(reply).decode())
        return 0
    if not reply.models:
        print(f"Ollama has no models yet: pull one, e.g. `ollama pull qwen2.5:7b`, then "
              f"`ctxkeep new --model qwen2.5:7b` (the default for new sessions is {reply.default_model})")
        return 0
    rows = [("  NAME", "SIZE", "PARAMS", "CONTEXT", "LOADED", "HOST")]
    rows += [(("* " if m.default else "  ") + m.name, size(m.size) if m.size else "?", m.parameter_size or "?",
              f"{m.context_length:,}" if m.context_length else "?", "yes" if m.loaded else "",
              ",".join(m.hosts)) for m in reply.models]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    for b in reply.down:
        print(f"\n{b.name} at {b.host} is DOWN ({b.error or 'unreachable'}): its models are not listed")
    if not any(m.default for m in reply.models):
        print(f"\nthe default for new sessions, {reply.default_model}, is not installed: "
              f"`ctxkeep models pull {reply.default_model}`, or choose an installed one: "
              "`ctxkeep models default NAME`")
    return 0


def default(args: argparse.Namespace) -> int:
    """Print the default model, or make NAME the default."""
    with connect(args) as client:
        if not args.name:  # from the status: it needs no answer from Ollama
            model = client.status().status.default_model
            print(msgspec.json.encode({"model": model}).decode() if args.json else model)
            return 0
        reply = client.set_default_model(args.name, force=args.force)
    print(msgspec.json.encode(reply).decode() if args.json else
          f"new sessions now use {reply.model} (recorded in {reply.config_path})")
    return 0


def bar(completed: int, total: int, width: int = 30) -> str:
    filled = int(width * completed / total) if total else 0
    return f"[{'█' * filled}{'░' * (width - filled)}] {size(completed)} / {size(total)}"


def pull(args: argparse.Namespace) -> int:
    """Pull a model, showing Ollama's steps (a bar while a layer downloads)."""
    live = sys.stderr.isatty()
    with connect(args) as client:
        client.subscribe("model.pull")
        pull_id = client.pull_model(args.name).pull_id
        shown = ""
        while True:
            _, event = client.wait_event()
            if getattr(event, "pull_id", None) != pull_id:
                continue
            if args.json:
                print(msgspec.json.encode(event).decode(), flush=True)
            if isinstance(event, ModelPullResult):
                break
            if args.json or not isinstance(event, ModelPullProgress):
                continue
            line = f"{event.status} {bar(event.completed, event.total)}" if event.total else event.status
            if live:
                print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
            elif event.status != shown:
                print(line, file=sys.stderr, flush=True)
            shown = event.status
    if live:
        print(file=sys.stderr)
    if event.status != "ok":
        print(f"ctxkeep: {event.code}: {event.message}", file=sys.stderr)
        return 1
    if not args.json:
        print(f"pulled {args.name}: `ctxkeep new --model {args.name}` or `ctxkeep chat --model {args.name}`")
    return 0
