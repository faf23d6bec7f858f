"""Generates `docs/protocol.md` and `docs/protocol.schema.json` from the Structs.

    python -m ctxkeep.protocol.docgen docs/

A test regenerates both and fails when the committed files differ.
"""

import sys
from pathlib import Path

import msgspec

from . import doc_text, events, replies, requests, subjects
from .errors import ErrorCode
from .example_errors import ERRORS
from .examples import EXAMPLES
from .goals import Decision, GoalCheckpoint, Goals, GoalsInput
from .guarantees import GUARANTEES
from .schema import render_schema
from .struct_tables import describe
from .structs import (
    AttachedFile,
    BackendStatus,
    CheckpointInfo,
    DaemonStatus,
    FileUse,
    MessageInfo,
    ModelSpeed,
    ModelSummaries,
    OllamaStatus,
    Segments,
    SessionInfo,
    SnapshotInfo,
    Usage,
)
from .tool_examples import TOOL_LOOP
from .tools import FunctionCall, FunctionSpec, ToolCall, ToolResult, ToolSpec
from .version import PROTOCOL_VERSION


def _frame(direction: str, frames: list[str]) -> list[str]:
    return [f"{direction} " + frames[0]] + [f"{' ' * len(direction)} {f}" for f in frames[1:]]


#: The record types the document describes after the replies and events.
RECORDS = (SessionInfo, MessageInfo, ToolSpec, FunctionSpec, ToolCall, FunctionCall, ToolResult, AttachedFile,
           FileUse, Usage, Segments, Goals, GoalCheckpoint, Decision, GoalsInput, CheckpointInfo, SnapshotInfo,
           DaemonStatus, OllamaStatus, BackendStatus, ModelSpeed, ModelSummaries, replies.PromptPart)


def render_markdown() -> str:
    """The whole protocol document: the prose of doc_text.py around what is generated
    from the Structs (each type's table, each request's example exchange)."""
    out = [f"# ctxkeep wire protocol, version {PROTOCOL_VERSION}", "",
           "_Generated from `protocol/` by `python -m ctxkeep.protocol.docgen docs/`; do not edit by hand._", "",
           *doc_text.INTRO.rstrip("\n").splitlines(), *GUARANTEES.strip("\n").splitlines(), "",
           "## Request types", "", doc_text.EXCHANGE_KEY]
    for cls in requests.ALL:
        out += _request(cls)
    out += ["", "## Tool calling, worked", "", doc_text.TOOLS, "", "```"]
    for direction, frame in TOOL_LOOP:
        out += _event(frame) if isinstance(frame, events.Event) else \
            _frame(direction, [msgspec.json.encode(frame).decode()])
    out += ["```", "", doc_text.IMAGES, ""]
    for title, classes in (("Reply types", replies.ALL), ("Event types", events.ALL)):
        out.append(f"## {title}")
        for answer in classes:
            describe(out, answer, requests.tag_of(answer))
        out.append("")
    out.append("## Records")
    for record in RECORDS:
        describe(out, record, record.__name__)
    out += ["", "## Error codes", "", "| code | meaning |", "|---|---|",
            *(f"| `{code.value}` | {doc_text.ERROR_MEANINGS[code.value]} |" for code in ErrorCode), ""]
    return "\n".join(out)


def _request(cls: type) -> list[str]:
    """A request type's table, reply, errors and example exchange."""
    out: list[str] = []
    request, reply, follow = EXAMPLES[cls]
    describe(out, cls, requests.tag_of(cls))
    errors = ERRORS[cls]
    out += ["", f"Reply: `{requests.tag_of(type(reply))}`.", "",
            "Errors: " + ("; ".join(f"`{code}` — {when}" for code, when in errors) if errors
                          else "only the frame errors") + ".", "", "```",
            *_frame(">", [msgspec.json.encode(request).decode()]),
            *_frame("<", [msgspec.json.encode(reply).decode()])]
    for event in follow:
        out += _event(event)
    return out + ["```"]


def _event(event: events.Event) -> list[str]:
    """An event as the frame pair a subscriber receives."""
    tag = requests.tag_of(type(event))
    return _frame("*", [subjects.topic(tag, event.session_id),
                        msgspec.json.encode(event).decode()])


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "protocol.md").write_text(render_markdown(), encoding="utf-8")
    (folder / "protocol.schema.json").write_text(render_schema(), encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
