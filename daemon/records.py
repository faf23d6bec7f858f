"""What the store keeps, as MessagePack Structs. Separate from the wire types so
the storage schema and the protocol can change apart."""

import msgspec

from ..protocol.models import MessageInfo, Options, SessionInfo


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
    created: float
    updated: float
    next_seq: int = 0
    message_count: int = 0
    #: prompt_eval_count of the last completed turn.
    token_count: int = 0

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
            options=self.options, num_ctx=self.num_ctx, window=self.window,
            created=self.created, updated=self.updated, message_count=self.message_count,
            token_count=self.token_count, busy=busy,
        )


class MessageRecord(msgspec.Struct, kw_only=True):
    """One message of the append-only history."""

    seq: int
    role: str
    content: str
    thinking: str = ""
    created: float
    status: str = "complete"
    error: str = ""
    model: str = ""
    eval_count: int = 0

    def info(self) -> MessageInfo:
        """The message as the protocol shows it."""
        return MessageInfo(
            seq=self.seq, role=self.role, content=self.content,  # type: ignore[arg-type]
            thinking=self.thinking, created=self.created, status=self.status,  # type: ignore[arg-type]
            error=self.error, model=self.model, eval_count=self.eval_count,
        )


class NewMessage(msgspec.Struct, kw_only=True):
    """A message to append; the store gives it its sequence number and time."""

    role: str
    content: str
    thinking: str = ""
    status: str = "complete"
    error: str = ""
    model: str = ""
    eval_count: int = 0


class ActiveContext(msgspec.Struct):
    """The messages sent to the model, by sequence number, oldest first."""

    seqs: list[int] = []
