"""What the store keeps, as MessagePack Structs. Separate from the wire types so
the storage schema and the protocol can change apart."""

from typing import NamedTuple

import msgspec

from ctxkeep.daemon.reliability import score as reliability_score
from ctxkeep.protocol.structs import (
    CheckpointInfo, MessageInfo, Options, SessionInfo, SnapshotInfo,
)
from ctxkeep.protocol.goals import Goals
from ctxkeep.daemon.store.attachment import Attachment
from ctxkeep.protocol.images import ImageRef
from ctxkeep.protocol.tools import ToolCall, ToolResult, ToolSpec, results_text
from ctxkeep.daemon.shorten import shortened


class SessionRecord(msgspec.Struct, kw_only=True):
    """A session's settings and counters."""

    id: str
    name: str
    model: str
    system: str = ""
    options: Options = {}
    num_ctx: int
    #: The model's context_length from /api/show (0: not asked yet).
    context_length: int = 0
    #: /api/show details.parameter_size, e.g. "7.6B" (for the reliability score).
    parameter_size: str = ""
    #: Whether /api/show lists "vision" among the model's capabilities (it sees images).
    vision: bool = False
    #: Automatic compaction: None = the daemon's setting; thresholds [] = the daemon's.
    auto_compaction: bool | None = None
    thresholds: list[float] = []
    created: float
    updated: float
    next_seq: int = 0
    message_count: int = 0
    #: prompt_eval_count of the last completed turn (an estimate after a compaction).
    token_count: int = 0
    tokens_exact: bool = True
    compactions: int = 0
    compaction_model: str = ""
    #: User messages stored and acknowledged whose answer has not been stored yet
    #: (queued or generating). Start-up recovery marks what a crash left here.
    pending: list[int] = []
    #: Recall for this session: None = the daemon's setting; recall_budget None = the daemon's.
    recall: bool | None = None
    recall_budget: int | None = None
    #: Tokens the last prompt's recall block took (part of its exact count).
    recalled_tokens: int = 0
    #: The last exact count and the features of the prompt it counted (by `anchor_model`'s
    #: tokenizer): later estimates are that count plus the estimate of what changed since.
    anchor_tokens: int = 0
    anchor_features: list[float] = []
    anchor_model: str = ""
    #: The part of `anchor_features` that was the prompt's recall block.
    anchor_recall: list[float] = []
    #: A branch: the session it was taken from ("" if none) and the seq of the last
    #: message of that session's history it shares.
    branched_from: str = ""
    branched_at: int = -1
    #: The tools every turn offers the model unless a `send` names its own.
    tools: list[ToolSpec] = []

    @property
    def window(self) -> int:
        """num_ctx capped by the model's context_length, when known."""
        if self.context_length:
            return min(self.num_ctx, self.context_length)
        return self.num_ctx

    def info(self, busy: bool = False) -> SessionInfo:
        """The session as the protocol shows it."""
        return SessionInfo(
            id=self.id, name=self.name, model=self.model, system=self.system,
            options=self.options, num_ctx=min(max(self.num_ctx, 0), 2**53), window=min(max(self.window, 0), 2**53),
            created=self.created, updated=self.updated, message_count=self.message_count,
            token_count=self.token_count, token_count_exact=self.tokens_exact, busy=busy,
            compactions=self.compactions, compaction_model=self.compaction_model,
            reliability=round(reliability_score(self.parameter_size, self.compactions), 4),
            auto_compaction=self.auto_compaction, thresholds=self.thresholds,
            recall=self.recall, recall_budget=self.recall_budget,
            branched_from=self.branched_from, branched_at=self.branched_at, tools=self.tools)


class MessageFields(msgspec.Struct, kw_only=True):
    """What a message is, stored or about to be: the fields `MessageRecord` and `NewMessage`
    share (each adds its own)."""

    role: str
    content: str
    thinking: str = ""
    status: str = "complete"
    error: str = ""
    model: str = ""
    eval_count: int = 0
    kind: str = "message"
    files: list[Attachment] = []
    #: For an answer: the seq of the user message it answers (-1: none).
    reply_to: int = -1
    #: For an answer: the messages recall brought into its prompt.
    recalled: list[int] = []
    #: For a regenerated answer: the answer it replaced (-1: none).
    alternative_of: int = -1
    tool_calls: list[ToolCall] = []
    #: A `tool` message's results (`content` is them as one text).
    tool_results: list[ToolResult] = []
    done_reason: str = ""
    format_error: str = ""
    images: list[ImageRef] = []
    #: A `tool` message's results that are a file's text, as the file's outline (else ""):
    #: level 1's short form of them.
    result_outlines: list[str] = []


class MessageRecord(MessageFields, kw_only=True, frozen=True):
    """One message of the append-only history."""

    seq: int
    created: float

    def short_results(self) -> list[str]:
        """Level 1's short form of each tool result: its outline, or its head and tail."""
        outlines = self.result_outlines + [""] * (len(self.tool_results) - len(self.result_outlines))
        return [o or shortened(r.content) for o, r in zip(outlines, self.tool_results)]

    def prompt_content(self, file_summaries: bool = False, images_seen: bool = False) -> str:
        """The text the model sees: the message, then its expanded @file references
        (as summaries, where level-1 compaction made them so), then, unless the model sees
        its images, each one's note ("[image: name]"); a `tool` message's results (head and
        tail, where level-1 compaction shortened them)."""
        if self.tool_results and file_summaries:
            return results_text([ToolResult(tool_name=r.tool_name, content=short)
                                 for r, short in zip(self.tool_results, self.short_results())])
        notes = [] if images_seen else [i.note() for i in self.images]
        if not self.files and not notes:
            return self.content
        blocks = [f.summary if file_summaries and f.summary else f.block for f in self.files]
        return "\n\n".join([self.content, *blocks, *notes])

    def info(self) -> MessageInfo:
        """The message as the protocol shows it."""
        fields = {f: getattr(self, f) for f in MessageInfo.__struct_fields__ if f != "files"}
        return MessageInfo(**fields, files=[f.info() for f in self.files])


class NewMessage(MessageFields, kw_only=True):
    """A message to append; the store gives it its sequence number and time."""

    #: When it was said, where that is known from elsewhere (an import's own time); 0: now.
    said_at: float = 0.0

    def record(self, seq: int, created: float) -> "MessageRecord":
        """The stored message, with its sequence number and time (its own, if it has one)."""
        fields = msgspec.structs.asdict(self)
        said_at = fields.pop("said_at")
        return MessageRecord(seq=seq, created=said_at or created, **fields)


class FileRefRecord(msgspec.Struct, kw_only=True):
    """One expansion of a file reference (seed 001's file_references table)."""

    message_seq: int
    path: str
    real_path: str
    mode: str
    tokens: int
    sha256: str
    mtime: float
    size: int


class Checkpoint(msgspec.Struct, kw_only=True):
    """A summary of older history in the active context (automatic compaction, level 3)."""

    id: str
    age: str = "recent"
    first_seq: int
    last_seq: int
    summary: str
    original_tokens: int
    current_tokens: int
    compressions: int = 1
    key_decisions: list[str] = []
    files: list[str] = []
    next_steps: list[str] = []
    created: float = 0.0
    #: User messages folded in verbatim (stores before the user-summary rule).
    verbatim: bool = False
    #: A summary of the user's own messages (shown as such: `user_summary` warning).
    of_user: bool = False

    def info(self) -> CheckpointInfo:
        return CheckpointInfo(
            id=self.id, age=self.age, first_seq=self.first_seq, last_seq=self.last_seq,  # type: ignore[arg-type]
            summary=self.summary, original_tokens=self.original_tokens,
            current_tokens=self.current_tokens, compressions=self.compressions,
            key_decisions=self.key_decisions, files=self.files, next_steps=self.next_steps,
            created=self.created, of_user=self.of_user)


class ActiveContext(msgspec.Struct):
    """What the model sees of a session, beside its system prompt: the messages (by
    sequence number, oldest first), the checkpoints before them, the goal record, the
    pinned messages, and which messages level 1 shows short: their @file references as
    summaries, a tool message's results as head and tail."""

    seqs: list[int] = []
    file_summaries: list[int] = []
    checkpoints: list[Checkpoint] = []
    goals: Goals = msgspec.field(default_factory=Goals)
    pinned: list[int] = []
    #: message_count when automatic compaction last ran (its cooldown counts from there).
    last_auto_at: int = -1


class SnapshotRecord(msgspec.Struct, kw_only=True):
    """A session's context state at one moment."""

    id: str
    created: float
    reason: str
    context: ActiveContext
    token_count: int
    tokens_exact: bool
    compactions: int
    #: The session's next_seq when it was taken: messages from there on joined later.
    next_seq: int = -1
    #: Set when `undo` restored it, so the next undo walks further back.
    undone: bool = False

    def info(self) -> SnapshotInfo:
        return SnapshotInfo(id=self.id, created=self.created, reason=self.reason,
                            messages=len(self.context.seqs),
                            checkpoints=len(self.context.checkpoints),
                            token_count=self.token_count, compactions=self.compactions,
                            undone=self.undone)


class CompactionRecord(msgspec.Struct, kw_only=True):
    """One compaction of a session's active context (the audit trail)."""

    time: float
    level: int
    strategy: str
    tokens_before: int
    tokens_after: int
    tokens_freed: int
    #: Active messages replaced by the summary, and those kept as they were.
    summarized: list[int]
    kept: list[int]
    summary_seq: int
    model: str
    requested_by: str = ""
    reason: str = ""
    #: Where in the full history it happened: the seq of the first message stored after
    #: it (its own summary, if any; -1 in records of earlier versions).
    at_seq: int = -1


class Calibration(msgspec.Struct):
    """Least-squares sums that fit token counts to text features: for one model (key: the
    model's name) the sum of its sessions' sums, each capped in weight; for one session of
    it (key: model NUL session id) that session's own."""

    xtx: list[list[float]] = []
    xty: list[float] = []
    #: Samples summed (older ones decayed); for a model, the capped weights summed.
    samples: float = 0.0
    #: Each feature's amount summed over the samples (decayed, capped alike): how much of it
    #: calibration has seen.
    mass: list[float] = []
    observations: int = 0
    #: Relative errors of the latest estimates' estimated parts, made before their exact counts.
    errors: list[float] = []
    #: 1: sums over whole prompts with every turn weighing alike (earlier versions: not used).
    version: int = 1


class View(NamedTuple):
    """A session as one step of work sees it, read once and passed from step to step: the
    session record, its context state and its active messages, oldest first."""

    session: SessionRecord
    context: ActiveContext
    active: list[MessageRecord]
