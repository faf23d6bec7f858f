"""Memory across sessions: what a turn may recall from the user's other sessions, and the
requests that show and prune it (`memory.search`, `memory.forget`).

A session's `memory` setting (null: the daemon's `memory`): "all" recalls from the other
sessions and is recalled by them; "none" recalls nothing from them (they may still recall
it); "private" neither recalls from them nor is ever recalled by them. A session or a
message can also be forgotten (`memory.forget`): it stays in its own session, and never
comes back in another. Memory never crosses users: each user's daemon has its own store.
"""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .counts import Seq
from .request_base import Request, SessionRef

MemoryMode = Literal["all", "none", "private"]


class MemoryRef(msgspec.Struct, kw_only=True):
    """A message of another session, recalled into a prompt."""

    session_id: str
    seq: Seq


class MemoryHit(msgspec.Struct, kw_only=True):
    """A passage memory holds, as `memory.search` ranks it (a whole message is part 0 of 1)."""

    session_id: str
    session_name: str
    seq: Seq
    part: Seq = 0
    parts: Seq = 1
    role: Literal["user", "assistant"]
    #: When the message was said (Unix seconds): an imported message's own time.
    created: float
    text: str
    #: How well it matches the query, relative to the best hit (1.0).
    score: float


class MemorySearch(Request, tag="memory.search"):
    """What memory would bring back for `query`, best first: as a turn of `session` would
    see it (that session's own messages, and what its setting or privacy excludes, left
    out), or ("") across every session that can be recalled."""

    query: Annotated[str, Meta(min_length=1, max_length=1000)]
    session: Annotated[str, Meta(max_length=200)] = ""
    limit: Annotated[int, Meta(ge=1, le=200)] = 20


class MemoryForget(Request, tag="memory.forget"):
    """Have memory forget a session (`seqs` empty) or some of its messages: they stay in
    their session and are never recalled into another. `undo` remembers them again."""

    session: SessionRef
    seqs: list[Seq] = []
    undo: bool = False
