"""Replies: what the daemon answers on the control socket, one per request.

Each carries the request's `id` and the protocol version `v`. A request that
fails gets an `error` reply instead of its usual one.
"""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .goals import Goals
from .memory import MemoryHit
from .structs import (
    AttachedFile,
    BackendStatus,
    CheckpointInfo,
    CompactionMark,
    Count,
    DaemonStatus,
    FileUse,
    MessageInfo,
    ModelInfo,
    SearchHit,
    Seq,
    SessionInfo,
    SnapshotInfo,
    Usage,
)
from .version import PROTOCOL_VERSION


class Reply(msgspec.Struct, tag_field="type", kw_only=True):
    """Fields every reply carries."""

    id: str = ""
    v: int = PROTOCOL_VERSION


class Error(Reply, tag="error"):
    """The request failed. `code` is an ErrorCode value; `message` says what to do."""

    code: str
    message: str


class HelloReply(Reply, tag="hello"):
    """Answer to `hello`."""

    daemon: str
    protocol: int
    pid: int
    #: The topics a subscriber may use: the subjects, each followed by `/<session_id>`.
    subjects: list[str]


class Pong(Reply, tag="pong"):
    """Answer to `ping`."""

    time: float


class StatusReply(Reply, tag="status"):
    """Answer to `status`."""

    status: DaemonStatus


class SessionReply(Reply, tag="session"):
    """One session: answer to session.create/get/rename/set_system/set_model."""

    session: SessionInfo


class SessionsReply(Reply, tag="sessions"):
    """Answer to `session.list`."""

    sessions: list[SessionInfo]


class Deleted(Reply, tag="deleted"):
    """Answer to `session.delete`: the session and its history are gone."""

    session_id: str


class HistoryReply(Reply, tag="history"):
    """A page of history. `next` is the `start` of the next page, or null at the end."""

    session_id: str
    messages: list[MessageInfo]
    total: Count
    next: Seq | None = None
    #: Full history only: the compactions that happened within this page (after its first
    #: message, up to just after its last), oldest first.
    compactions: list[CompactionMark] = []


class Accepted(Reply, tag="accepted"):
    """A `send` was queued. `ahead` generations of this session run before it."""

    session_id: str
    generation_id: str
    ahead: Annotated[int, Meta(ge=0)] = 0
    #: The message's @file references as expanded (read now, from the client's cwd).
    files: list[AttachedFile] = []
    #: One line per reference that could not be read (the prompt carries a note instead).
    warnings: list[str] = []


class Cancelled(Reply, tag="cancelled"):
    """Answer to `cancel`. `cancelled` is false when nothing was running."""

    session_id: str
    cancelled: bool
    generation_id: str = ""
    #: True when what was stopped is the compaction after an answer (its generation had
    #: ended): the context goes back as it was before it.
    compaction: bool = False


class FilesReply(Reply, tag="files"):
    """Answer to `files`."""

    session_id: str
    files: list[FileUse]


class UsageReply(Reply, tag="usage"):
    """Answer to `usage`: the usage, and the checkpoints in the context."""

    session_id: str
    usage: Usage
    checkpoints: list[CheckpointInfo] = []
    pinned: list[Seq] = []


class GoalsReply(Reply, tag="goals"):
    """Answer to goals.get and goals.set."""

    session_id: str
    goals: Goals


class SnapshotReply(Reply, tag="snapshot"):
    """Answer to snapshot.create, snapshot.restore and snapshot.delete."""

    session_id: str
    snapshot: SnapshotInfo


class SnapshotsReply(Reply, tag="snapshots"):
    """Answer to snapshot.list."""

    session_id: str
    snapshots: list[SnapshotInfo]


class CompactionAccepted(Reply, tag="compaction.accepted"):
    """A `compact` was queued; `compaction.request` and `compaction.result` follow."""

    session_id: str
    compaction_id: str
    ahead: Annotated[int, Meta(ge=0)] = 0


class CompactionPlan(Reply, tag="compaction.plan"):
    """Answer to a `compact` dry run: what a compaction would do now. Nothing changed."""

    session_id: str
    #: Sequence numbers of the active messages that would be summarized, and of those kept.
    summarize: list[Seq]
    keep: list[Seq]
    #: The context now (exact when token_count_exact), the part summarized, and after.
    tokens_before: Count
    tokens_before_exact: bool
    tokens_summarized: Count
    #: Projected: the kept messages plus a summary of about a quarter of what it
    #: replaces (at most `summary_max_tokens`).
    tokens_after: Count
    tokens_freed: Count
    #: Summarization calls needed (more than 1 when the history is summarized in chunks).
    calls: Count
    model: str
    #: Why nothing would be compacted, or "".
    skip_reason: str = ""


class SearchReply(Reply, tag="search"):
    """Answer to `search`: the newest hits (at most `limit`), and how many matched."""

    hits: list[SearchHit]
    total: Count
    #: The words that were looked for (the query's words the index keeps).
    words: list[str]


class PullAccepted(Reply, tag="pull.accepted"):
    """Answer to `models.pull`: its events carry this id."""

    pull_id: str
    model: str


class ModelsReply(Reply, tag="models"):
    """Answer to `models.list`."""

    models: list[ModelInfo]
    #: The model new sessions use when they name none.
    default_model: str
    #: Model servers that could not be asked (their models are missing from the list).
    down: list[BackendStatus] = []


class ImageReply(Reply, tag="image"):
    """Answer to `image.get`: the image's bytes as base64."""

    hash: str
    media_type: str
    data: str


#: What a part of a prompt is (PromptPart.kind).
PartKind = Literal["system", "goals", "checkpoints", "message"]


class PromptPart(msgspec.Struct, kw_only=True):
    """One part of a prompt as the model sees it."""

    #: system (the system prompt), goals (the goal record), checkpoints (the summaries of
    #: older history), message (a message of the active context).
    kind: PartKind
    text: str
    #: Estimated tokens (the estimator, calibrated on the model's exact counts).
    tokens: Count
    #: A message's role and seq (-1 for the parts of the system message).
    role: str = "system"
    seq: Annotated[int, Meta(ge=-1)] = -1
    #: A message shown shorter than it was said: "summary" (a compaction's summary),
    #: "shortened" (its files as outlines, results or an answer as head and tail).
    shown: Literal["whole", "summary", "shortened"] = "whole"


class PromptReply(Reply, tag="prompt"):
    """Answer to `prompt`: the prompt's parts, in order, and their total."""

    session_id: str
    parts: list[PromptPart]
    tokens: Count
    window: Count


class DefaultModelReply(Reply, tag="default_model"):
    """Answer to `models.default`: the default now, and the file that records it."""

    model: str
    config_path: str


class MemoryHits(Reply, tag="memory.hits"):
    """Answer to `memory.search`: the best hits (at most `limit`) and the words looked for."""

    hits: list[MemoryHit]
    words: list[str]


class MemoryForgotten(Reply, tag="memory.forgotten"):
    """Answer to `memory.forget`: the session as it now stands (`remembered`, `forgotten`)."""

    session: SessionInfo


AnyReply = (
    Error | HelloReply | Pong | StatusReply | SessionReply | SessionsReply | Deleted
    | HistoryReply | Accepted | Cancelled | UsageReply | CompactionAccepted | CompactionPlan
    | FilesReply | GoalsReply | SnapshotReply | SnapshotsReply | ModelsReply | SearchReply
    | PullAccepted | DefaultModelReply | ImageReply | PromptReply | MemoryHits | MemoryForgotten
)
ALL: tuple[type[Reply], ...] = AnyReply.__args__
