"""What the store keeps of a session's context state, as MessagePack Structs: its checkpoints
and the active context (what the model sees), snapshots of it, the audit trail of
compactions, and the estimator's calibrations. Beside `records.py` (sessions, messages)."""

import msgspec

from ctxkeep.daemon.store.prompt_count import PromptCount
from ctxkeep.protocol.goals import Goals
from ctxkeep.protocol.structs import CheckpointInfo, SnapshotInfo


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
    #: The summary holds the user's own messages too (shown as such: `user_summary` warning).
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
    #: The session's prompt count then.
    count: PromptCount
    compactions: int
    #: The session's next_seq when it was taken: messages from there on joined later.
    next_seq: int = -1
    #: Set when `undo` restored it, so the next undo walks further back.
    undone: bool = False

    def info(self) -> SnapshotInfo:
        return SnapshotInfo(id=self.id, created=self.created, reason=self.reason,
                            messages=len(self.context.seqs),
                            checkpoints=len(self.context.checkpoints),
                            token_count=self.count.tokens, compactions=self.compactions,
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
