"""Memory across sessions: after a turn's own recall, the passages of the user's other
sessions its new message needs, ranked as recall ranks (words, meaning, who is asked of,
newer a little higher), each with the session and date it comes from.

The index of every session is built in a worker thread when a turn first needs it (until
then turns recall from their own session only) and kept up to date from the event bus:
an event about a session marks it to be looked at before the next ranking (new messages,
a changed setting), a deleted session is left out at once; what cannot change what memory
reads marks nothing (changes.py).
"""

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.memory import counting, precision, ranking
from ctxkeep.daemon.memory.changes import may_change, read_as
from ctxkeep.daemon.memory.index import MemoryIndex, family
from ctxkeep.daemon.memory.query import Query, Remembered
from ctxkeep.daemon.memory.reading import Reader
from ctxkeep.daemon.retrieval import asking
from ctxkeep.daemon.retrieval.lexical import query_terms
from ctxkeep.daemon.retrieval.semantic import Embedder
from ctxkeep.daemon.store.errors import StoreError
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol.events import Event, SessionCreated, SessionDeleted

log = logging.getLogger(__name__)

#: Passages each ranking hands to the fusion.
RANKED = 200
#: Messages indexed on the event loop before a turn (of all sessions together); a larger
#: backlog (imports, many sessions) is read in a worker thread.
INLINE_MESSAGES = 200
#: Passages of deleted sessions the index may hold before it is read again (when they are
#: also more than the live ones).
REBUILD_DEAD = 20_000
#: The embedder's key for memory's passages.
EMBED_KEY = "\0memory"


class Memory:
    """The user's other sessions, as recall's second source."""

    def __init__(self, store: Store, embedder: Embedder, config: Config) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.index: MemoryIndex | None = None
        self._building: asyncio.Task[None] | None = None
        self._dirty: set[str] = set()
        #: Each session as memory last read it (`read_as`).
        self._read_as: dict[str, tuple[object, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.reader = Reader(store, self._spawn, self._was_read)
        #: Reading what a finished turn stored, before the next turn needs it (`read_soon`).
        self._soon: asyncio.Task[None] | None = None

    @property
    def mutating(self) -> int:
        """Worker threads adding to the index now: memory ranks nothing meanwhile."""
        return self.reader.mutating

    def mode(self, session: SessionRecord) -> str:
        return session.memory or self.config.memory

    def heard(self, event: Event) -> None:
        """The event bus's listener: note what changed."""
        session_id = getattr(event, "session_id", "")
        if not session_id:
            return
        if self.index is None:  # a session's first sign of life: build the index now, off the loop,
            self._start_build()  # so that the first turn that asks of memory finds it there
        if not may_change(event, self._read_as.get(session_id)):
            return
        if isinstance(event, SessionDeleted):
            self._dirty.discard(session_id)
            self._read_as.pop(session_id, None)
            if self.index is not None:
                self._drop(self.index, session_id)
                if self.index.dead > max(REBUILD_DEAD, len(self.index.passages) - self.index.dead):
                    self._start_build()  # mostly deleted passages: read again (the old one serves meanwhile)
        else:
            self._dirty.add(session_id)
            if isinstance(event, SessionCreated):  # read before its first turn, not by it
                self.read_soon()

    async def ready(self) -> MemoryIndex | None:
        """The index, up to date with what the bus reported; None while it is first built."""
        if self.index is None:
            self._start_build()
            return None
        if self.mutating:  # a large backlog is being read into the index: leave it be
            return self.index
        inline = INLINE_MESSAGES  # what one turn may read on the event loop, all sessions together
        for session_id in list(self._dirty - self.reader.catching_up):
            self._dirty.discard(session_id)
            inline -= self._catch_up(self.index, session_id, inline)
        self._recount(self.index)
        return self.index

    def _drop(self, index: MemoryIndex, session_id: str) -> None:
        """A deleted session: never recalled again, and its passages out of the word
        statistics (`_recount`)."""
        index.drop(session_id)
        if not self.mutating:
            self._recount(index)

    def _recount(self, index: MemoryIndex) -> None:
        """Keep the word statistics to what memory may bring back (counting.py)."""
        leaving, back = counting.recount(index)
        if len(leaving) + len(back) > counting.INLINE:
            self._spawn(counting.apply(index, leaving, back, lambda: self.index), "memory-recount")
        elif leaving or back:
            counting.apply_now(index, leaving, back)

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """A task of memory's own (cancelled at close)."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def read_soon(self) -> None:
        """A turn stored its messages, or a session was made: read them into the index once
        no turn is starting (jobs/giving_way.py), so that the next turn finds them read
        instead of reading them before its first token."""
        if self.index is not None and (self._soon is None or self._soon.done()):
            self._soon = self._spawn(self._read_soon(), "memory-read-soon")

    async def _read_soon(self) -> None:
        await self.embedder.giving_way.clear()
        await self.ready()

    def _start_build(self) -> None:
        if self._building is None or self._building.done():
            self._building = asyncio.get_running_loop().create_task(self._build(), name="memory-index")

    def status(self) -> str:
        """Memory as `status` shows it."""
        if self.config.memory == "none":
            return "memory off (memory = \"none\" in config.toml; sessions set to all still recall)"
        if self.index is None:
            return "memory: indexing the sessions"
        live = len(self.index.passages) - self.index.dead
        reading = len(self.reader.catching_up)
        owners = len(self.index.owners)
        return f"memory across {owners:,} session{'s' if owners != 1 else ''} ({live:,} passages)" + (
            f"; reading {reading:,} more session{'s' if reading != 1 else ''} (memory adds nothing until then)"
            if reading else "")

    async def close(self) -> None:
        tasks = [t for t in (self._building, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def built(self, wait: float) -> bool:
        """Whether the index is there, after waiting up to `wait` seconds for its first build."""
        if await self.ready() is None and self._building is not None:
            await asyncio.wait({self._building}, timeout=wait)
        return self.index is not None

    async def _build(self) -> None:
        self._dirty.clear()
        index = await asyncio.to_thread(self.reader.read_all)
        self._dirty |= set(index.owners)  # what changed while it was read is looked at next
        self.index = index  # (a rebuild's: deleted while it was read are looked at and dropped)
        self._want_vectors(index)
        log.info("memory: %d passages of %d sessions indexed", len(index.passages), len(index.owners))

    def _catch_up(self, index: MemoryIndex, session_id: str, inline: int) -> int:
        """Index what the session stored since (reading.py: here when it is at most `inline`
        messages, else in a worker thread); a session gone is dropped. Returns the messages
        read here."""
        try:
            session = self.store.sessions.get(session_id)
        except StoreError:
            self._drop(index, session_id)
            self._read_as.pop(session_id, None)
            return 0
        self._read_as[session_id] = read_as(session)
        read = self.reader.catch_up(index, index.owner(session, family(session, self._session)), session, inline)
        if read:
            self._want_vectors(index)
        return read

    def _was_read(self, index: MemoryIndex, session_id: str) -> None:
        """A worker thread read a session's backlog: what it stored meanwhile is looked at
        next, and the new passages are embedded."""
        self._dirty.add(session_id)
        self._want_vectors(index)

    def _session(self, session_id: str) -> SessionRecord | None:
        try:
            return self.store.sessions.get(session_id)
        except StoreError:
            return None

    def family(self, session: SessionRecord) -> str:
        """The first session of `session`'s conversation (itself when it is no branch)."""
        return family(session, self._session)

    def _want_vectors(self, index: MemoryIndex) -> None:
        if index.semantic.done < len(index.passages):
            self.embedder.want(EMBED_KEY, lambda: (index.passages, index.semantic))

    async def names_people(self, text: str) -> bool:
        """Whether a message names a writer of a chat log memory holds (people.py)."""
        index = await self.ready()
        return index is not None and not self.mutating and index.people.named(text, index.allowed)

    async def may_bring(self, query: Query) -> bool:
        """Whether a turn's memory could bring anything for `query` whatever its vector (which
        the turn then need not ask for): the index is there and idle, and the message's
        words do not rule it out (precision.may_be_strong)."""
        index = await self.ready()
        return index is not None and self._open(index, query, strong=True)

    def _open(self, index: MemoryIndex, query: Query, strong: bool) -> bool:
        """Whether `rank` ranks at all: passages there, no worker adding to them, a message
        with words of its own ("and then?" points at nothing elsewhere), and, for a turn's
        memory, words that do not rule out a strong match."""
        if not index.passages or self.mutating or not query.own:
            return False
        return not strong or precision.may_be_strong(index, query)

    async def rank(self, session: SessionRecord | str, query: Query, limit: int = RANKED,
                   strong: bool = False) -> list[tuple[int, float]]:
        """(passage id, score relative to the best) of what memory could bring back into a
        turn of `session` (its record, or its id; "" = of none), best first, those below
        ranking.FLOOR left out, near copies of a better one too (select.distinct). `strong`:
        what a turn's memory may bring, by precision.py's rules (only what is about the message)."""
        session_id = session if isinstance(session, str) else session.id
        index = await self.ready()
        if index is None or not self._open(index, query, strong):
            return []
        asker = session if not isinstance(session, str) else self._session(session) if session else None
        return ranking.ranked(index, query, index.candidates(session_id, self.family(asker) if asker else ""),
                              limit, strong)

    async def search(self, text: str, asker: str = "", limit: int = 20, wait: float = 60.0) -> list[Remembered]:
        """What memory holds for `text`, best first, as a turn of `asker` ("" = of none)
        would rank it, without a turn's precision rules (`ctxkeep memory search`); its index
        built first, waiting up to `wait` seconds the first time."""
        words = query_terms(text)
        vector = await self.embedder.vector(text, self.config.recall_embed_wait_ms / 1000)
        await self.built(wait)
        ranked = await self.rank(asker, Query(words, vector, asking.addressed(text), own=frozenset(words)), limit)
        index = self.index
        return [] if index is None else [
            Remembered(owner.session_id, owner.name, index.passages[pid], score, pid)
            for pid, score in ranked[:limit] if (owner := index.source(pid)) is not None]

