"""Which events about a session may change what memory reads of it: its name, family, memory
settings, forgotten messages and count (`read_as`), or its messages. Streamed text, usage and
progress never do; nor does an update that shows the session as memory last read it."""

from collections.abc import Sequence
from typing import Protocol

from ctxkeep.protocol.events import (
    CompactionProgress,
    ContextUsage,
    Event,
    GenerationThinking,
    GenerationToken,
    GenerationWaiting,
    SessionCreated,
    SessionUpdated,
)

#: Events that never change what memory reads of a session.
UNCHANGING = (GenerationToken, GenerationThinking, GenerationWaiting, ContextUsage, CompactionProgress)


class Shown(Protocol):
    """What memory reads of a session, as its record and the protocol's `SessionInfo` both have it."""

    @property
    def name(self) -> str: ...
    @property
    def branched_from(self) -> str: ...
    @property
    def remembered(self) -> bool: ...
    @property
    def memory(self) -> str | None: ...
    @property
    def forgotten(self) -> Sequence[int]: ...
    @property
    def message_count(self) -> int: ...


def read_as(session: Shown) -> tuple[object, ...]:
    """What memory takes from a session's record: the same in an update means nothing to read."""
    return (session.name, session.branched_from, session.remembered, session.memory,
            tuple(session.forgotten), session.message_count)


def may_change(event: Event, last_read: tuple[object, ...] | None) -> bool:
    """Whether `event` may change what memory read of its session (`last_read`: `read_as` of
    the record it read last, None if it never read it)."""
    if isinstance(event, UNCHANGING):
        return False
    return not (isinstance(event, SessionUpdated | SessionCreated) and last_read == read_as(event.session))
