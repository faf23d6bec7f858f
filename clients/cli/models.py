"""`ctxkeep models`: the models Ollama has, as the daemon sees them."""

import argparse

import msgspec

from .common import connect


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "models", help="the models installed in Ollama",
        description="List the models Ollama has: size on disk, parameters, the most context "
                    "each takes, whether it is loaded now; * marks the default for new sessions.")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    return parser


def size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1000  # type: ignore[assignment]
    return ""


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        reply = client.models()
    if args.json:
        print(msgspec.json.encode(reply).decode())
        return 0
    if not reply.models:
        print(f"Ollama has no models yet: pull one, e.g. `ollama pull qwen2.5:7b`, then "
              f"`ctxkeep new --model qwen2.5:7b` (the default for new sessions is {reply.default_model})")
        return 0
    rows = [("  NAME", "SIZE", "PARAMS", "CONTEXT", "LOADED")]
    rows += [(("* " if m.default else "  ") + m.name, size(m.size), m.parameter_size or "?",
              f"{m.context_length:,}" if m.context_length else "?", "yes" if m.loaded else "")
             for m in reply.models]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    if not any(m.default for m in reply.models):
        print(f"\nthe default for new sessions, {reply.default_model}, is not installed: "
              f"`ollama pull {reply.default_model}`, or set default_model in config.toml")
    return 0
