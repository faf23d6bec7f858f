"""`ctxkeep set`, `rename`, `delete`, `cancel`: change or remove a session."""

import argparse
import sys

import msgspec

from ...protocol.structs import OptionValue
from .common import add_session_argument, connect, session_line

#: Options whose value is a list (Ollama's `stop`): each --option adds one.
LISTS = ("stop",)


def options_of(pairs: list[tuple[str, OptionValue]]) -> dict[str, OptionValue]:
    """The options from repeated --option KEY=VALUE (a list option collects its values)."""
    out: dict[str, OptionValue] = {}
    for key, value in pairs:
        if key in LISTS:
            collected = out.setdefault(key, [])
            assert isinstance(collected, list)
            collected.append(str(value))
        else:
            out[key] = value
    return out


def _option(text: str) -> tuple[str, OptionValue]:
    """`key=value`, the value read as a number or boolean when it is one."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    value: OptionValue = raw
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        for number in (int, float):
            try:
                value = number(raw)
                break
            except ValueError:
                pass
    return key, value


def add_set(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "set", help="change a session's model, window, options or system prompt",
        description="Change a session's settings; what is not given stays as it is.")
    add_session_argument(parser)
    parser.add_argument("--model", default="", help="the Ollama model")
    parser.add_argument("--force", action="store_true",
                        help="use --model even if Ollama does not have it (yet)")
    parser.add_argument("--num-ctx", type=int, default=None, help="the context window in tokens")
    parser.add_argument("--option", type=_option, action="append", metavar="KEY=VALUE",
                        help="an Ollama option, e.g. temperature=0.2 (repeat for more; replaces "
                             "all options)")
    parser.add_argument("--system", default=None, help="the system prompt ('' clears it)")
    parser.add_argument("--compaction-model", default=None,
                        help="the model that writes this session's summaries ('' = the default)")
    parser.add_argument("--auto", choices=["on", "off"], default=None,
                        help="automatic compaction for this session")
    parser.add_argument("--thresholds", default=None, metavar="L1,L2,L3",
                        help="budget fill for levels 1-3, e.g. 0.5,0.65,0.8 ('' = the default)")
    parser.add_argument("--recall", choices=["on", "off"], default=None,
                        help="recall: earlier passages the new message needs open each prompt")
    parser.add_argument("--recall-budget", type=int, default=None, metavar="N",
                        help="the most tokens recall may add to a prompt (0 = the default)")
    parser.add_argument("--memory", choices=["all", "none", "private"], default=None,
                        help="memory across sessions: all = recall from the other sessions and be "
                             "recalled by them; none = recall nothing from them; private = neither")
    parser.add_argument("--json", action="store_true", help="print the session as JSON")
    parser.set_defaults(run=run_set)
    return parser


def run_set(args: argparse.Namespace) -> int:
    with connect(args) as client:
        session = client.session(args.session).session
        if args.system is not None:
            session = client.set_system(session.id, args.system).session
        thresholds = None
        if args.thresholds is not None:
            try:
                thresholds = [float(x) for x in args.thresholds.split(",") if x.strip()]
            except ValueError:
                print("ctxkeep: --thresholds takes three numbers, e.g. 0.5,0.65,0.8", file=sys.stderr)
                return 2
        if (args.model or args.num_ctx is not None or args.option or args.compaction_model is not None
                or args.auto or thresholds is not None or args.recall or args.recall_budget is not None
                or args.memory):
            session = client.set_model(session.id, model=args.model, num_ctx=args.num_ctx,
                                       options=options_of(args.option) if args.option else None,
                                       compaction_model=args.compaction_model,
                                       auto_compaction=None if args.auto is None else args.auto == "on",
                                       thresholds=thresholds, force=args.force,
                                       recall=None if args.recall is None else args.recall == "on",
                                       recall_budget=args.recall_budget, memory=args.memory).session
    print(msgspec.json.encode(session).decode() if args.json else session_line(session))
    return 0


def add_rename(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("rename", help="rename a session",
                                 description="Give a session a new, unique name.")
    add_session_argument(parser)
    parser.add_argument("name", metavar="NAME", help="the new name")
    parser.set_defaults(run=lambda args: _rename(args))
    return parser


def _rename(args: argparse.Namespace) -> int:
    with connect(args) as client:
        print(session_line(client.rename(args.session, args.name).session))
    return 0


def add_delete(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("delete", help="delete a session and its history",
                                 description="Delete a session and its whole history. "
                                             "This cannot be undone.")
    add_session_argument(parser)
    parser.set_defaults(run=lambda args: _delete(args))
    return parser


def _delete(args: argparse.Namespace) -> int:
    with connect(args) as client:
        print(f"deleted {client.delete(args.session).session_id}")
    return 0


def add_cancel(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("cancel", help="stop a session's running generation",
                                 description="Cancel the generation running in a session.")
    add_session_argument(parser)
    parser.set_defaults(run=lambda args: _cancel(args))
    return parser


def _cancel(args: argparse.Namespace) -> int:
    with connect(args) as client:
        reply = client.cancel(args.session)
    if reply.compaction:
        print(f"stopped the compaction after {reply.generation_id}'s answer: the context is as it was before it")
    else:
        print(f"cancelled {reply.generation_id}" if reply.cancelled else "nothing was running")
    return 0
