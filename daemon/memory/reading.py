"""Reading sessions into memory's index: every session when the index is first built (in a
worker thread), then what each stored since — on the event loop when it is little, else
queued for a worker thread, one session after another, while memory ranks nothing (a turn
never waits for it)."""

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from ctxkeep.daemon.memory.index import MemoryIndex, Owner, family, prepared
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.store import Store


class Reader:
    """Memory's reads of the store: `read_all`, and `catch_up` for one session."""

    def __init__(self, store: Store,
                 spawn: Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"],
                 read: Callable[[MemoryIndex, str], None]) -> None:
        self.store = store
        #: Starts a task of memory's own; `read(index, session_id)`: a worker thread read a session.
        self._spawn, self._read = spawn, read
        #: Sessions whose backlog a worker thread reads, one after another.
        self._queued: deque[tuple[MemoryIndex, Owner, SessionRecord]] = deque()
        self._worker: asyncio.Task[None] | None = None
        #: The sessions queued or being read.
        self.catching_up: set[str] = set()
        #: Worker threads adding to the index now: memory ranks nothing meanwhile.
        self.mutating = 0

    def read_all(self) -> MemoryIndex:
        """An index of every session, oldest first (in a worker thread: it reads the store whole)."""
        index = MemoryIndex()
        sessions = sorted(self.store.sessions.all(), key=lambda s: s.created)
        by_id = {s.id: s for s in sessions}
        for session in sessions:
            self.read_pages(index, index.owner(session, family(session, by_id.get)), session)
        return index

    def catch_up(self, index: MemoryIndex, owner: Owner, session: SessionRecord, inline: int) -> int:
        """Index what `session` stored since `owner` was last read: here when it is at most
        `inline` messages, else in the worker's queue. Returns the messages read here."""
        behind = session.next_seq - owner.next_seq
        if behind <= 0:
            return 0
        if behind > inline:
            self.catching_up.add(session.id)
            self._queued.append((index, owner, session))
            if self._worker is None or self._worker.done():
                self._worker = self._spawn(self._read_queued(), "memory-catch-up")
            return 0
        self.read_pages(index, owner, session)
        return behind

    async def _read_queued(self) -> None:
        """The queued sessions, each read in a worker thread in turn (the event loop serves
        everyone else meanwhile)."""
        while self._queued:
            index, owner, session = self._queued.popleft()
            await self._read_in_thread(index, owner, session)

    async def _read_in_thread(self, index: MemoryIndex, owner: Owner, session: SessionRecord) -> None:
        self.mutating += 1
        try:
            await asyncio.to_thread(self.read_pages, index, owner, session)
        finally:
            self.mutating -= 1
            self.catching_up.discard(session.id)
        self._read(index, session.id)

    def read_pages(self, index: MemoryIndex, owner: Owner, session: SessionRecord) -> None:
        """The session's messages from `owner.next_seq` on, a page at a time (none once it
        was deleted meanwhile)."""
        start: int | None = owner.next_seq
        while start is not None:
            page, start, _ = self.store.history.page(session.id, start=start, limit=1000)
            if not page:
                break
            if owner.session_id in index.owners:
                index.add(owner, page, *prepared(page))
