"""A message of a conversation brought in (`session.import`): from an export, another
tool, or an HTTP client's copy of its conversation."""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .images import ImageInput
from .tools import ToolCall, ToolResult


class ImportedMessage(msgspec.Struct, kw_only=True):
    """A message of a conversation brought in from elsewhere (an export, another tool)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    thinking: str = ""
    kind: Literal["message", "summary"] = "message"
    #: "interrupted" for an answer that was cut off.
    status: Literal["complete", "interrupted"] = "complete"
    error: str = ""
    #: Seqs in the session it joins (an export's own, into a new one): what it answers and
    #: what it replaced (-1: none; an answer's `reply_to` is then the last question before
    #: it in the same import).
    reply_to: Annotated[int, Meta(ge=-1)] = -1
    alternative_of: Annotated[int, Meta(ge=-1)] = -1
    #: An answer's tool calls; a `tool` message's results (its content is then them as text).
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    images: list[ImageInput] = []
    #: When it was said (Unix time; None: when it is imported). Recall shows it, and ranks by it.
    created: Annotated[float, Meta(ge=0, le=1e11)] | None = None
