"""Requests about what the model sees of a session: pins, the goal record, snapshots of the
context state, its usage, the prompt itself, and compaction."""

from typing import Annotated

from msgspec import Meta

from .goals import GoalsInput
from .request_base import Request, SessionRef
from .structs import Seq


class Pin(Request, tag="pin"):
    """Pin a message (`pinned: true`) so no compaction touches it, or unpin it."""

    session: SessionRef
    seq: Seq
    pinned: bool = True


class GoalsGet(Request, tag="goals.get"):
    """The session's goal record."""

    session: SessionRef


class GoalsSet(Request, tag="goals.set"):
    """Replace the session's goal record (edit it)."""

    session: SessionRef
    goals: GoalsInput


class SnapshotCreate(Request, tag="snapshot.create"):
    """Save the session's context state now."""

    session: SessionRef
    reason: Annotated[str, Meta(max_length=200)] = "manual"


class SnapshotList(Request, tag="snapshot.list"):
    """The session's snapshots, newest first."""

    session: SessionRef


class SnapshotRestore(Request, tag="snapshot.restore"):
    """Put a snapshot back. Two rules, one per form:

    - with `snapshot_id`: the snapshot's active context exactly (its messages, checkpoints
      and file summaries); turns that joined after it leave the active context and stay
      in history.
    - without (`""`): undo, which takes back the newest compaction not yet undone, from
      the snapshot taken just before it: what that compaction wrote (a summary,
      checkpoints, file outlines) leaves the active context, the messages it removed come
      back, and turns that joined since stay, after them. Undo again to go one compaction
      further back.

    Either way the history keeps every message, and the goal record and pins stay as
    they are now. Refused with `busy` while the session generates or compacts."""

    session: SessionRef
    snapshot_id: str = ""


class SnapshotDelete(Request, tag="snapshot.delete"):
    """Delete a snapshot."""

    session: SessionRef
    snapshot_id: str


class Usage(Request, tag="usage"):
    """How full the session's context window is, split by segment: `system` (the system
    prompt), `pinned` (the goal record, its locked decisions, and pinned messages),
    `files` (expanded @file references and tool results), `summaries` (summaries and checkpoints),
    `recent` (the conversation's own messages)."""

    session: SessionRef


class Prompt(Request, tag="prompt"):
    """What the model would see now, before a new message: the prompt's parts in order —
    the system prompt, the goal record, the checkpoints, then each message of the active
    context as it is shown (summaries as summaries, shortened tool results and answers as
    their head and tail) — each with its estimated tokens. The recall block is not part of
    it: a turn adds it for its own message (`generation.recalled` says what it held)."""

    session: SessionRef


class Compact(Request, tag="compact"):
    """Summarize all but the last `tail_turns` turns into one summary message.

    Accepted at once; progress and the outcome arrive as `compaction.*`
    events. With `dry_run`, the reply is the plan (what would be summarized
    and the tokens it would free) and nothing changes.
    """

    session: SessionRef
    #: Turns (a user message and what follows it) kept verbatim (null: the configured default).
    tail_turns: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    #: Added to the summarizer's instructions, e.g. "keep every file name".
    instructions: Annotated[str, Meta(max_length=4000)] = ""
    dry_run: bool = False
    #: Who asked, for the compaction.request event (e.g. "gui", "cli").
    requested_by: Annotated[str, Meta(max_length=200)] = ""
