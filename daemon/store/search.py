"""Search across every session's history, through the word index (word_index.py)."""

import heapq

from ctxkeep.daemon.store import codecs, keys, word_index
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.daemon.store.txn import Txn

Hits = tuple[list[tuple[str, MessageRecord]], int]


class Search:
    """Messages by the words they hold, newest first."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.dbs = env.dbs

    def find(self, query: str, session_id: str = "", limit: int = 50) -> Hits:
        """(session id, message) of the newest messages that have every word of `query`
        (in one session, when given), at most `limit`; and how many match in all."""
        wanted = word_index.words(query)
        if not wanted:
            return [], 0

        def find(txn: Txn) -> Hits:
            found = word_index.matches(txn, self.dbs["search"], wanted, session_id)
            # A session's seqs run in time order: only each session's newest `limit` can be
            # among the newest `limit` overall, so only those are read.
            by_session: dict[str, list[int]] = {}
            for sid, seq in found:
                by_session.setdefault(sid, []).append(seq)
            hits = []
            for sid, seqs in by_session.items():
                for seq in heapq.nlargest(limit, seqs):
                    raw = txn.get(keys.numbered(sid, seq), db=self.dbs["messages"])
                    if raw is not None:
                        hits.append((sid, codecs.message(raw)))
            hits.sort(key=lambda hit: hit[1].created, reverse=True)
            return hits[:limit], len(found)
        return self.env.read(find)
