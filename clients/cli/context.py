"""`ctxkeep goals`, `pin`, `snapshot`, `undo`: a session's goal record, pins and snapshots."""

import argparse
import sys

import msgspec

from ...protocol.goals import Decision, Goals
from ...protocol.structs import SnapshotInfo
from .common import add_session_argument, connect, fail, when

MARK = {"completed": "[x]", "in-progress": "[~]", "pending": "[ ]"}


def describe_goals(goals: Goals) -> str:
    if not (goals.goal or goals.checkpoints or goals.decisions or goals.artifacts or goals.next_steps):
        return ("no goal record yet: the model sets one with [GOAL] lines, or "
                "`ctxkeep goals SESSION --goal TEXT`")
    lines = [f"goal: {goals.goal or '(none)'}"]
    lines += [f"  {MARK[c.status]} {c.description}" for c in goals.checkpoints]
    lines += [f"decision: {d.description}{' (locked)' if d.locked else ''}" for d in goals.decisions]
    lines += [f"artifact: {a}" for a in goals.artifacts]
    lines += [f"next: {n}" for n in goals.next_steps]
    return "\n".join(lines)


def add_goals(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "goals", help="a session's goal record",
        description="Show a session's goal record (goal, checkpoints, decisions, artifacts, next "
                    "steps), kept verbatim through every compaction. The options edit it.")
    add_session_argument(parser)
    parser.add_argument("--goal", help="set the goal")
    parser.add_argument("--decide", metavar="TEXT", help="record a decision")
    parser.add_argument("--lock", action="store_true", help="with --decide: lock it (never compressed)")
    parser.add_argument("--clear", action="store_true", help="empty the goal record")
    parser.add_argument("--json", action="store_true", help="print it as JSON")
    parser.set_defaults(run=run_goals)
    return parser


def run_goals(args: argparse.Namespace) -> int:
    if args.lock and not args.decide:
        return fail("--lock locks the decision given with --decide: add --decide TEXT")
    with connect(args) as client:
        goals = client.goals(args.session).goals
        if args.clear or args.goal is not None or args.decide:
            goals = Goals() if args.clear else goals
            if args.goal is not None:
                goals = msgspec.structs.replace(goals, goal=args.goal)
            if args.decide:
                goals = msgspec.structs.replace(goals, decisions=[
                    *goals.decisions, Decision(description=args.decide, locked=args.lock)])
            goals = client.set_goals(args.session, goals).goals
    print(msgspec.json.encode(goals).decode() if args.json else describe_goals(goals))
    return 0


def add_pin(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "pin", help="pin a message so no compaction touches it",
        description="Pin message SEQ (its number in `ctxkeep show`): it stays verbatim in the "
                    "active context through every compaction. --off unpins it.")
    add_session_argument(parser)
    parser.add_argument("seq", metavar="SEQ", type=int, help="the message's number")
    parser.add_argument("--off", action="store_true", help="unpin")
    parser.set_defaults(run=run_pin)
    return parser


def run_pin(args: argparse.Namespace) -> int:
    with connect(args) as client:
        client.pin(args.session, args.seq, pinned=not args.off)
    print(f"{'unpinned' if args.off else 'pinned'} #{args.seq}")
    return 0


def add_snapshot(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "snapshot", help="save, list, restore or delete context snapshots",
        description="Snapshots hold a session's context state (active messages, checkpoints, "
                    "file outlines). One is taken before every compaction. `restore ID` puts "
                    "that state back exactly: turns sent after it leave the active context "
                    "(`undo` keeps them). Goals and pins stay as they are now, and the "
                    "history keeps every message.")
    add_session_argument(parser)
    parser.add_argument("action", nargs="?", default="list", choices=["create", "list", "restore", "delete"])
    parser.add_argument("snapshot_id", nargs="?", default="", metavar="ID", help="for restore, delete")
    parser.add_argument("--json", action="store_true",
                        help="print the snapshot (list: the snapshots) as JSON")
    parser.set_defaults(run=run_snapshot)
    return parser


def run_snapshot(args: argparse.Namespace) -> int:
    if args.json:
        return snapshot_json(args)
    with connect(args) as client:
        if args.action == "create":
            s = client.snapshot(args.session).snapshot
            print(f"created snapshot {s.id}")
        elif args.action == "restore":
            s = client.restore(args.session, args.snapshot_id).snapshot
            print(f"restored snapshot {s.id} ({s.reason}, {s.messages} messages, {s.checkpoints} checkpoints)")
        elif args.action == "delete":
            if not args.snapshot_id:
                print("ctxkeep: `snapshot SESSION delete` needs an ID")
                return 2
            print(f"deleted snapshot {client.delete_snapshot(args.session, args.snapshot_id).snapshot.id}")
        else:
            snapshots = client.snapshots(args.session).snapshots
            if not snapshots:
                print("no snapshots yet")
            for s in snapshots:
                undone = "  (undone)" if s.undone else ""
                print(f"{s.id}  {when(s.created)}  {s.reason:<50} {s.messages:>4} msgs  "
                      f"{s.checkpoints} checkpoints  ~{s.token_count:,} tokens{undone}")
    return 0


def add_undo(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "undo", help="undo the last compaction",
        description="Take back the session's last compaction: the messages it summarized or "
                    "set aside come back, what it wrote (a summary, checkpoints, file outlines) "
                    "leaves, and turns sent since stay. Undo again to go one compaction further "
                    "back. The history keeps every message either way.")
    add_session_argument(parser)
    parser.set_defaults(run=run_undo)
    return parser


def run_undo(args: argparse.Namespace) -> int:
    with connect(args) as client:
        s = client.restore(args.session).snapshot
    print(f"restored the state {s.reason} ({when(s.created)}): {s.messages} messages, "
          f"{s.checkpoints} checkpoints")
    return 0


def snapshot_json(args: argparse.Namespace) -> int:
    """`snapshot --json`: the reply's snapshot (or snapshots) as JSON."""
    data: SnapshotInfo | list[SnapshotInfo]
    with connect(args) as client:
        if args.action == "create":
            data = client.snapshot(args.session).snapshot
        elif args.action == "restore":
            data = client.restore(args.session, args.snapshot_id).snapshot
        elif args.action == "delete":
            if not args.snapshot_id:
                print("ctxkeep: `snapshot SESSION delete` needs an ID", file=sys.stderr)
                return 2
            data = client.delete_snapshot(args.session, args.snapshot_id).snapshot
        else:
            data = client.snapshots(args.session).snapshots
    print(msgspec.json.encode(data).decode())
    return 0
