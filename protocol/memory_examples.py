"""The worked examples of `memory.search` and `memory.forget` in docs/protocol.md (a test
round-trips them)."""

import msgspec

from . import events, replies
from .memory import MemoryForget, MemoryHit, MemorySearch
from .request_base import Request
from .structs import SessionInfo

_T = 1795000000.0
_SID = "8c1d2e3f4a5b"
_FAMILY = SessionInfo(id=_SID, name="family", model="llama3.2", num_ctx=8192, window=8192,
                      created=_T - 86400 * 9, updated=_T - 86400 * 9, message_count=6, token_count=840)

MEMORY_SEARCH: tuple[Request, replies.Reply, list[events.Event]] = (
    MemorySearch(id="40", query="where does my sister live"),
    replies.MemoryHits(id="40", words=["live", "sister"], hits=[MemoryHit(
        session_id=_SID, session_name="family", seq=2, role="user", created=_T - 86400 * 9,
        text="My sister Ingrid just moved to Tromsø.", score=1.0)]),
    [])

MEMORY_FORGET: tuple[Request, replies.Reply, list[events.Event]] = (
    MemoryForget(id="41", session="family", seqs=[2]),
    replies.MemoryForgotten(id="41", session=msgspec.structs.replace(_FAMILY, forgotten=[2])),
    [events.SessionUpdated(seq=80, time=_T, session_id=_SID,
                           session=msgspec.structs.replace(_FAMILY, forgotten=[2]))])
