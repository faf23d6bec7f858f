"""What the store keeps, as MessagePack Structs: the storage schema, and only that. Separate
from the wire types so the storage schema and the protocol can change apart (shown.py maps
one to the other; what the model is shown of a message is context/content.py's)."""

from typing import NamedTuple

import msgspec

from ctxkeep.daemon.store.attachment import Attachment
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.prompt_count import Anchor, CacheTally, PromptCount
from ctxkeep.protocol.images import ImageRef
from ctxkeep.protocol.memory import MemoryRef
from ctxkeep.protocol.structs import Options
from ctxkeep.protocol.tools import ToolCall, ToolResult, ToolSpec


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
    #: The last prompt's count (an estimate after a compaction).
    count: PromptCount = PromptCount()
    compactions: int = 0
    compaction_model: str = ""
    #: User messages stored and acknowledged whose answer has not been stored yet
    #: (queued or generating). Start-up recovery marks what a crash left here.
    pending: list[int] = []
    #: Recall for this session: None = the daemon's setting; recall_budget None = the daemon's.
    recall: bool | None = None
    recall_budget: int | None = None
    #: Memory across sessions: None = the daemon's setting ("all", "none", "private"); false
    #: when memory forgot the whole session; the messages it forgot.
    memory: str | None = None
    remembered: bool = True
    forgotten: list[int] = []
    #: The last exact count, that estimates start from.
    anchor: Anchor = Anchor()
    #: What the server's prompt cache served over the turns whose server said.
    cache: CacheTally = CacheTally()
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
    #: For an answer: the messages memory brought from other sessions into its prompt.
    remembered: list[MemoryRef] = []
    #: For an answer: why its prompt's recall held less than recall found ("": it did not).
    recall_cut: str = ""
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


# msgspec lets a frozen Struct extend a mutable one (a stored message never changes; one about
# to be stored may); mypy's dataclass rules do not
class MessageRecord(MessageFields, kw_only=True, frozen=True):  # type: ignore[misc]
    """One message of the append-only history."""

    seq: int
    created: float


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
    """One expansion of a file reference (which file, read how, its size and hash when read)."""

    message_seq: int
    path: str
    real_path: str
    mode: str
    tokens: int
    sha256: str
    mtime: float
    size: int


class View(NamedTuple):
    """A session as one step of work sees it, read once and passed from step to step: the
    session record, its context state and its active messages, oldest first."""

    session: SessionRecord
    context: ActiveContext
    active: list[MessageRecord]
