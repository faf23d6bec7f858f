"""What the store keeps, as MessagePack Structs: the storage schema, and only that. Separate
from the wire types so the storage schema and the protocol can change apart (shown.py maps
one to the other; what the model is shown of a message is context/content.py's)."""

from typing import NamedTuple

import msgspec

from ctxkeep.daemon.store.attachment import Attachment
from ctxkeep.daemon.store.context_records import ActiveContext
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
    #: Memory across sessions: None = the daemon's setting ("all", "none", "private"); false
    #: when memory forgot the whole session; the messages it forgot.
    memory: str | None = None
    remembered: bool = True
    forgotten: list[int] = []
    #: Tokens the last prompt's recall block took (part of its exact count).
    recalled_tokens: int = 0
    #: The server's prompt cache, over the turns whose server said: the prompt tokens they
    #: sent and, of those, the ones its cache served; the last turn's served (-1: not said).
    cache_prompt_tokens: int = 0
    cache_served_tokens: int = 0
    cached_tokens: int = -1
    #: The last answer's tokens, while token_count is the exact count of the prompt it
    #: answered (the next prompt holds them too).
    answer_tokens: int = 0
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
    def next_prompt(self) -> int:
        """What the next prompt holds before its new message, as far as it is known: after
        a turn, that prompt's exact count less its recall block plus the answer."""
        if not self.tokens_exact or not self.answer_tokens:
            return self.token_count
        return min(2**53, max(0, self.token_count - self.recalled_tokens + self.answer_tokens))

    @property
    def cache_hit_rate(self) -> float | None:
        """The share of prompt tokens the server's cache served (None: no server said)."""
        return round(self.cache_served_tokens / self.cache_prompt_tokens, 4) if self.cache_prompt_tokens else None

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


class MessageRecord(MessageFields, kw_only=True, frozen=True):
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
