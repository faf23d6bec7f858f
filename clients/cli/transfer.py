"""`ctxkeep export` and `ctxkeep import`: a session out as Markdown or JSON, and a
conversation in from an export or from the chat-message JSON that Ollama's and OpenAI's
APIs take.

The JSON export is the exchange format: `export → import → export` gives the same
document apart from the session's id and the times. It holds the session's settings and
every message of its history (role, text, thinking, kind, status, what it answers and what it
replaced, tool calls and results, images with their bytes), and a branch's link to its
source; the @file blocks a message carried are not part of it.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from ...protocol.chat_shapes import NotAMessage, imported, text_of
from ...protocol.imported import ImportedMessage
from ..core import CtxkeepError
from .common import add_latest_session_argument, connect, session_line, session_or_latest

FORMAT = "ctxkeep.session"
VERSION = 1
#: Messages per import request (each request stays well under the frame cap).
BATCH_BYTES = 256 * 1024


def add_export(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "export", help="write a session out as Markdown or JSON",
        description="Write a session's settings and full history as JSON (what `ctxkeep import` "
                    "reads back) or as a Markdown transcript.")
    add_latest_session_argument(parser)
    parser.add_argument("--format", choices=["json", "md"], default="json")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    parser.set_defaults(run=run_export)
    return parser


def add_import(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "import", help="bring a conversation in as a new session",
        description="Create a session from FILE: a `ctxkeep export` (JSON), or chat messages as "
                    "Ollama's and OpenAI's chat APIs take them — a JSON list of {role, content}, "
                    "an object with `messages` (and `model`), or JSON lines, one message each. "
                    "A leading system message becomes the session's system prompt.")
    parser.add_argument("file", metavar="FILE", help="the file (`-`: stdin)")
    parser.add_argument("--name", default=None, help="the new session's name")
    parser.add_argument("--model", default=None, help="the model (default: the file's, or the daemon's)")
    parser.add_argument("--num-ctx", type=int, default=None, metavar="N",
                        help="the window in tokens (default: the file's, or the daemon's)")
    parser.add_argument("--force", action="store_true", help="use the model even if Ollama lacks it")
    parser.add_argument("--json", action="store_true", help="print the new session as JSON")
    parser.set_defaults(run=run_import)
    return parser


def exported(client, ref: str) -> dict[str, Any]:
    """The session as the exchange format."""
    session = client.session(ref).session
    messages: list[dict[str, Any]] = []
    start: int | None = 0
    while start is not None:
        page = client.history(session.id, start=start, limit=500)
        messages += [{"role": m.role, "content": m.content, "thinking": m.thinking, "kind": m.kind,
                      "status": m.status, "error": m.error, "created": m.created,
                      "reply_to": m.reply_to, "alternative_of": m.alternative_of,
                      **_extras(client, m)} for m in page.messages]
        start = page.next
    branch = {"branched_from": {"id": session.branched_from, "name": _name_of(client, session.branched_from)},
              "branched_at": session.branched_at} if session.branched_from else {}
    return {"format": FORMAT, "version": VERSION, "id": session.id, "name": session.name,
            "model": session.model, "system": session.system, "options": session.options,
            "num_ctx": session.num_ctx, **branch, **_memory(session), "messages": messages}


def _memory(session: Any) -> dict[str, Any]:
    """What memory may do with the session's words, where it is not the default: its own
    setting, forgotten whole, forgotten messages (an import keeps them so)."""
    out: dict[str, Any] = {"memory": session.memory} if session.memory else {}
    if not session.remembered:
        out["remembered"] = False
    if session.forgotten:
        out["forgotten"] = list(session.forgotten)
    return out


def _extras(client, m: Any) -> dict[str, Any]:
    """A message's tool calls, tool results and images (their bytes fetched), where it has any."""
    out: dict[str, Any] = {}
    if m.tool_calls:
        out["tool_calls"] = msgspec.to_builtins(m.tool_calls)
    if m.tool_results:
        out["tool_results"] = msgspec.to_builtins(m.tool_results)
    if m.images:
        out["images"] = [{"name": i.name, "data": client.image(i.hash).data} for i in m.images]
    return out


def _name_of(client, session_id: str) -> str:
    try:
        return client.session(session_id).session.name
    except CtxkeepError:
        return ""  # deleted since


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# {doc['name']}", "", f"Model: {doc['model']} · window {doc['num_ctx']:,} tokens", ""]
    if doc["system"]:
        lines += ["## system", "", doc["system"], ""]
    for m in doc["messages"]:
        mark = " (summary)" if m["kind"] == "summary" else (" (interrupted)" if m["status"] == "interrupted" else "")
        lines += [f"## {m['role']}{mark}", "", m["content"], ""]
    return "\n".join(lines)


def run_export(args: argparse.Namespace) -> int:
    with connect(args) as client:
        doc = exported(client, session_or_latest(client, args.session))
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n" if args.format == "json" else markdown(doc)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


class NotAConversation(ValueError):
    """The file is not a conversation this command reads."""


def parse(text: str) -> dict[str, Any]:
    """{name, model, system, options, num_ctx, messages} from any of the accepted shapes."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise NotAConversation(f"neither JSON nor JSON lines ({exc})") from None
    if isinstance(data, dict) and data.get("format") == FORMAT:
        if data.get("version") != VERSION:
            raise NotAConversation(f"an export of version {data.get('version')}; this ctxkeep reads {VERSION}")
        return {k: data.get(k) for k in ("name", "model", "system", "options", "num_ctx",
                                         "branched_from", "branched_at", "memory", "remembered", "forgotten")} \
            | {"messages": data.get("messages") or []}
    source = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(source, list):
        raise NotAConversation("no messages: expected a list of {role, content}, or an object with `messages`")
    messages = [m for m in source if isinstance(m, dict)]
    system = ""
    if messages and messages[0].get("role") in ("system", "developer"):
        system = text_of(messages.pop(0).get("content"))
    model = data.get("model", "") if isinstance(data, dict) else ""
    return {"name": "", "model": model, "system": system, "options": None, "num_ctx": None,
            "messages": messages}


def imported_messages(raw: list[dict[str, Any]]) -> list[ImportedMessage]:
    try:
        return imported(raw)
    except NotAMessage as exc:
        raise NotAConversation(str(exc)) from None


def batches(messages: list[ImportedMessage]) -> list[list[ImportedMessage]]:
    """Messages cut into requests of at most BATCH_BYTES of text each."""
    out: list[list[ImportedMessage]] = [[]]
    size = 0
    for m in messages:
        n = len(m.content.encode()) + len(m.thinking.encode()) + sum(len(i.data) for i in m.images) + 64
        if out[-1] and size + n > BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(m)
        size += n
    return out


def _keep_memory(client, session: Any, doc: dict[str, Any]) -> Any:
    """The imported session with the export's memory setting and forgotten marks."""
    if doc.get("memory") in ("all", "none", "private"):
        session = client.set_model(session.id, memory=doc["memory"]).session
    forgotten = [s for s in doc.get("forgotten") or () if isinstance(s, int) and 0 <= s < session.message_count]
    if forgotten:
        client.memory_forget(session.id, forgotten)
    if doc.get("remembered") is False:
        client.memory_forget(session.id)
    return client.session(session.id).session if forgotten or doc.get("remembered") is False else session


def _import_hint(exc: CtxkeepError) -> str:
    """What `import` takes to get past the daemon's refusal."""
    if exc.code == "model_not_found":
        return " (import it on an installed model with --model NAME, or keep this one with --force)"
    if "name" in exc.message:
        return " (give the new session another name with --name NAME)"
    return ""


def _branch_source(client, link: Any) -> str:
    """The session an exported branch was taken from, here (by id, else by name); "" when
    it is not here (said on stderr) or the export is no branch."""
    if not isinstance(link, dict):
        return ""
    for ref in (link.get("id"), link.get("name")):
        if ref:
            try:
                return client.session(str(ref)).session.id
            except CtxkeepError:
                pass
    print(f"ctxkeep: note: the session this one was branched from ({link.get('name') or link.get('id')}) "
          "is not here: imported without the link", file=sys.stderr)
    return ""


def run_import(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        doc = parse(text)
        messages = imported_messages(doc["messages"])
    except (OSError, UnicodeDecodeError) as exc:
        print(f"ctxkeep: cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 1
    except NotAConversation as exc:
        print(f"ctxkeep: cannot import {args.file}: {exc}", file=sys.stderr)
        return 1
    parts = batches(messages)
    with connect(args) as client:
        source = _branch_source(client, doc.get("branched_from"))
        try:
            session = client.import_session(
                name=args.name if args.name is not None else doc["name"] or "",
                model=args.model or doc["model"] or "", system=doc["system"] or "",
                options=doc["options"] or {}, num_ctx=args.num_ctx or doc["num_ctx"],
                force=args.force, messages=parts[0], branched_from=source,
                branched_at=int(doc.get("branched_at") or -1) if source else -1).session
        except CtxkeepError as exc:
            raise CtxkeepError(exc.code, f"cannot import {args.file}: {exc.message}{_import_hint(exc)}") from None
        for part in parts[1:]:
            session = client.import_session(session=session.id, messages=part).session
        session = _keep_memory(client, session, doc)
    print(msgspec.json.encode(session).decode() if args.json else f"imported {session_line(session)}")
    return 0
