"""Requests: what a client sends on the control socket (DEALER -> ROUTER).

Every request is one JSON object with `type` (the tag below), `id` (chosen by
the client, echoed in the reply) and `v` (the protocol version).
"""

from typing import Annotated

import msgspec
from msgspec import Meta

from .context_requests import (
    Compact,
    GoalsGet,
    GoalsSet,
    Pin,
    Prompt,
    SnapshotCreate,
    SnapshotDelete,
    SnapshotList,
    SnapshotRestore,
    Usage,
)
from .images import ImageHash
from .imported import ImportedMessage
from .memory import MemoryForget, MemoryMode, MemorySearch
from .request_base import NumCtx, Request, SessionRef
from .structs import Options, Seq
from .tools import ToolSpec
from .turn_requests import Alternative, Branch, Cancel, Edit, Regenerate, Send


class Hello(Request, tag="hello"):
    """Introduce a client. The reply tells the daemon's version and protocol."""

    client: Annotated[str, Meta(max_length=200)] = ""


class Ping(Request, tag="ping"):
    """Liveness check; answered with `pong`."""


class Status(Request, tag="status"):
    """The daemon's status: version, sessions, generations, Ollama reachability."""


class SessionCreate(Request, tag="session.create"):
    """Create a session. Empty fields take the daemon's configured defaults."""

    name: Annotated[str, Meta(max_length=200)] = ""
    model: Annotated[str, Meta(max_length=200)] = ""
    system: str = ""
    options: Options = {}
    num_ctx: NumCtx | None = None
    #: The tools its turns offer the model when a `send` names none.
    tools: list[ToolSpec] = []
    #: Skip the checks against Ollama: the model is installed, the options are ones it knows.
    force: bool = False


class SessionList(Request, tag="session.list"):
    """All sessions, most recently updated first."""


class SessionGet(Request, tag="session.get"):
    """One session."""

    session: SessionRef


class SessionRename(Request, tag="session.rename"):
    """Give a session a new name (names are unique)."""

    session: SessionRef
    name: Annotated[str, Meta(min_length=1, max_length=200)]


class SessionDelete(Request, tag="session.delete"):
    """Delete a session and its whole history."""

    session: SessionRef


class History(Request, tag="history"):
    """A page of a session's full history, oldest first, from sequence `start`.

    With `active`, the messages of the active context instead: what the model
    sees (summaries in place of what they replaced), in order.
    """

    session: SessionRef
    start: Seq = 0
    limit: Annotated[int, Meta(ge=1, le=1000)] = 100
    active: bool = False


class SetSystem(Request, tag="session.set_system"):
    """Replace a session's system prompt."""

    session: SessionRef
    system: str


class SetTools(Request, tag="session.set_tools"):
    """Replace the tools a session's turns offer the model when a `send` names none
    ([]: none)."""

    session: SessionRef
    tools: list[ToolSpec]


class SetModel(Request, tag="session.set_model"):
    """Change a session's model, Ollama options or num_ctx. Omitted fields stay as they are;
    `options`, when given, replaces the session's options as a whole (it is not merged)."""

    session: SessionRef
    model: Annotated[str, Meta(max_length=200)] = ""
    options: Options | None = None
    num_ctx: NumCtx | None = None
    #: The model that writes this session's summaries ("" = the default).
    compaction_model: Annotated[str, Meta(max_length=200)] | None = None
    #: Automatic compaction for this session: on/off (null: the daemon's setting) and its
    #: thresholds as fractions of the budget: exactly three, rising, each in (0, 1], e.g.
    #: [0.5, 0.65, 0.8] ([] = the daemon's).
    auto_compaction: bool | None = None
    thresholds: list[Annotated[float, Meta(gt=0, le=1)]] | None = None
    #: Recall for this session: on/off (null: leave as it is) — it follows the daemon's
    #: setting until set — and the most tokens it may add to a prompt (0: the daemon's).
    recall: bool | None = None
    recall_budget: Annotated[int, Meta(ge=0, le=2**24)] | None = None
    #: Memory across sessions for this session (null: leave as it is): "all", "none" or
    #: "private" (protocol/memory.py says what each means).
    memory: MemoryMode | None = None
    #: Skip the checks against Ollama: the model is installed, the options are ones it knows.
    force: bool = False


class SessionImport(SessionCreate, tag="session.import"):
    """A conversation brought in: a new session with `session.create`'s settings and these
    messages (all of them active), or, with `session`, more messages for a session being
    imported (a conversation larger than one frame is sent in several requests)."""

    session: Annotated[str, Meta(max_length=200)] = ""
    messages: list[ImportedMessage] = []
    #: A branch of this session (id or name), sharing its history up to seq `branched_at`.
    branched_from: Annotated[str, Meta(max_length=200)] = ""
    branched_at: Annotated[int, Meta(ge=-1)] = -1


class Search(Request, tag="search"):
    """Messages of every session's history (or of one) that contain every word of
    `query`, newest first. Words are matched whole, in any case; the most common English
    words are not indexed."""

    query: Annotated[str, Meta(min_length=1, max_length=1000)]
    session: Annotated[str, Meta(max_length=200)] = ""
    limit: Annotated[int, Meta(ge=1, le=500)] = 50


class ModelsPull(Request, tag="models.pull"):
    """Have Ollama download a model. Accepted at once; `model.pull.progress` events follow,
    then one `model.pull.result`."""

    model: Annotated[str, Meta(min_length=1, max_length=200)]


class ModelsList(Request, tag="models.list"):
    """The models installed in Ollama, with their size, context length and whether they
    are loaded; which one new sessions use by default."""


class ModelsDefault(Request, tag="models.default"):
    """Make `model` the default of new sessions: written to the daemon's config.toml
    (`default_model`, the rest of the file kept as it is) and applied at once. Refused with
    `model_not_found` when Ollama does not have it, unless `force`."""

    model: Annotated[str, Meta(min_length=1, max_length=200)]
    force: bool = False


class Files(Request, tag="files"):
    """The files a session's messages referenced (`@path`), latest use first.

    With `unused_in_last` = N, only those no message among the last N referenced.
    """

    session: SessionRef
    unused_in_last: Annotated[int, Meta(ge=0, le=2**31)] = 0


class ImageGet(Request, tag="image.get"):
    """The bytes of an image a message holds (its `images` item's `hash`)."""

    hash: ImageHash


AnyRequest = (
    Hello | Ping | Status | SessionCreate | SessionList | SessionGet | SessionRename
    | SessionDelete | History | Send | Regenerate | Edit | Alternative | Cancel | SetSystem | SetTools | SetModel | Usage | Compact | Files | Pin | GoalsGet | GoalsSet
    | SnapshotCreate | SnapshotList | SnapshotRestore | SnapshotDelete | ModelsList | SessionImport | Branch
    | Search | ModelsPull | ModelsDefault | ImageGet | Prompt | MemorySearch | MemoryForget
)

#: Every request class, in the order the protocol document lists them.
ALL: tuple[type[Request], ...] = AnyRequest.__args__


def tag_of(cls: type[msgspec.Struct]) -> str:
    """The `type` value of a tagged Struct class."""
    return cls.__struct_config__.tag  # type: ignore[return-value]


TYPES: dict[str, type[Request]] = {tag_of(c): c for c in ALL}
