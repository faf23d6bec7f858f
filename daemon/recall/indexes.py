"""The sessions' recall indexes: each built from the store when a turn first needs it (in a
worker thread when there are many messages), or ahead of its first turn (an import, a
branch); kept for the sessions used last; following what each stores. One catch-up at a
time per index (`SessionIndex.catching_up`): a turn sent while its import is indexed in a
thread waits for that, rather than reading the index half built (its passages added, who
speaks not yet) or adding what the thread adds a second time."""

import asyncio
import logging
from collections import OrderedDict

from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.retrieval.semantic import Embedder
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.store import Store

log = logging.getLogger("ctxkeep.daemon.recall.recaller")

#: Sessions whose indexes are kept.
SESSIONS_KEPT = 8
#: Messages indexed in the event loop's own thread; more go to a worker thread.
INLINE_MESSAGES = 200


class SessionIndexes:
    """The indexes of the sessions used last."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._kept: OrderedDict[str, SessionIndex] = OrderedDict()
        #: Sessions being indexed ahead of their first turn; whether the daemon is stopping.
        self._preparing: set[asyncio.Task[SessionIndex]] = set()
        self._closing = False
        #: Indexes no longer kept, held until no turn is starting (`_release`).
        self.released: list[SessionIndex] = []

    async def get(self, session: SessionRecord | str) -> SessionIndex:
        """The session's index, with every message stored so far as its record (`session`;
        read when only its id is given) says (its embeddings asked for)."""
        record = self.store.sessions.get(session) if isinstance(session, str) else session
        session_id = record.id
        index = self._kept.pop(session_id, None) or SessionIndex()
        self._kept[session_id] = index
        while len(self._kept) > SESSIONS_KEPT:
            self._release(self._kept.popitem(last=False)[1])
        if record.next_seq > index.lexical.next_seq or index.catching_up.locked():
            async with index.catching_up:
                behind = record.next_seq - index.lexical.next_seq
                if behind > INLINE_MESSAGES:
                    log.info("session=%s: indexing %d messages for recall", session_id, behind)
                    await asyncio.to_thread(self._catch_up, session_id, index)
                elif behind > 0:
                    self._catch_up(session_id, index)
        if index.semantic.done < len(index.lexical.passages):
            self.embedder.want(session_id, lambda: (index.lexical.passages, index.semantic))
        return index

    def _release(self, index: SessionIndex) -> None:
        """An index no longer kept is freed once no turn is starting (jobs/giving_way.py), not
        by the turn that drops it before its first token: freeing a 10,000-message index takes
        ~4 ms."""
        self.released.append(index)
        if len(self.released) == 1:  # the first since they were last freed
            self.embedder.giving_way.then(self.released.clear)

    def _catch_up(self, session_id: str, index: SessionIndex) -> None:
        start: int | None = index.lexical.next_seq
        while start is not None and not self._closing:  # closing: the store is about to close
            page, start, _ = self.store.history.page(session_id, start=start, limit=1000)
            index.add(page)
            if not page:
                break

    def forget(self, session_id: str) -> None:
        self._kept.pop(session_id, None)

    def prepare(self, session_id: str) -> None:
        """Index a session ahead of its first turn, in the background: its passages, then
        their embeddings."""
        task = asyncio.get_running_loop().create_task(self.get(session_id), name="recall-index")
        self._preparing.add(task)
        task.add_done_callback(self._prepared)

    def _prepared(self, task: "asyncio.Task[SessionIndex]") -> None:
        self._preparing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("indexing a session for recall failed: %r (its first turn indexes it)", task.exception())

    def stored(self, session_id: str) -> None:
        """Messages were stored: if the session's index is kept, it takes them in and has
        them embedded soon."""
        index = self._kept.get(session_id)
        if index is not None and not index.catching_up.locked():  # (else that catch-up or the next turn's reads them)
            self._catch_up(session_id, index)
            self.embedder.want(session_id, lambda: (index.lexical.passages, index.semantic))

    async def close(self) -> None:
        """Stop indexing: one under way stops after its page, before the store closes."""
        self._closing = True
        await asyncio.gather(*self._preparing, return_exceptions=True)
