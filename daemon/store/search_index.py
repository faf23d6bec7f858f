"""A word index of every stored message, kept in the transaction that stores it (a
question awaiting its answer: in the one that ends its turn, so that the commit the
client waits for stays small).

Key: the word, a NUL, the session id and the message's seq (as messages are keyed); no
value. A search reads, for each word of the query, the keys that start with it (only
those, however large the history), and intersects them: every word must occur. Words
are the lower-cased runs of letters, digits and `_` of two characters or more, without
the most common English words.
"""

import heapq
import re
from collections.abc import Iterable

import lmdb

from ctxkeep.daemon.store.environment import _SEQ, Environment, _message_key
from ctxkeep.daemon.store.records import MessageRecord

_WORD = re.compile(r"\w{2,}")
#: Longer words are indexed by their first 64 characters (LMDB keys are bounded).
MAX_WORD = 64
#: The most common English words: left out of the index (and of level 2's relevance).
STOP = frozenset("the and for are but not you your with this that have from they was were will "
                 "would there their what when which who how can could should its into than then "
                 "them these those also just about".split())


def words(text: str) -> set[str]:
    """The words of a text that the index keeps."""
    return {w[:MAX_WORD] for w in _WORD.findall(text.lower()) if w not in STOP}


def _key(word: str, session_id: str, seq: int) -> bytes:
    return word.encode() + b"\x00" + session_id.encode() + b"/" + _SEQ.pack(seq)


def add(txn: lmdb.Transaction, db, session_id: str, seq: int, text: str) -> None:
    for word in words(text):
        txn.put(_key(word, session_id, seq), b"", db=db)


def remove(txn: lmdb.Transaction, db, session_id: str, seq: int, text: str) -> None:
    for word in words(text):
        txn.delete(_key(word, session_id, seq), db=db)


def postings(txn: lmdb.Transaction, db, word: str, session_id: str = "") -> set[tuple[str, int]]:
    """(session id, seq) of every message with `word` (in one session, when given)."""
    prefix = word.encode() + b"\x00" + (session_id.encode() + b"/" if session_id else b"")
    found: set[tuple[str, int]] = set()
    cursor = txn.cursor(db=db)
    if not cursor.set_range(prefix):
        return found
    start = len(word.encode()) + 1
    for key in cursor.iternext(values=False):
        if not key.startswith(prefix):
            break
        sid, _, seq = key[start:].partition(b"/")
        found.add((sid.decode(), _SEQ.unpack(seq)[0]))
    return found


def matches(txn: lmdb.Transaction, db, query_words: Iterable[str],
            session_id: str = "") -> set[tuple[str, int]]:
    """Messages that have every word (the rarest word's postings are read first)."""
    result: set[tuple[str, int]] | None = None
    for word in sorted(set(query_words), key=len, reverse=True):  # longer words are rarer
        found = postings(txn, db, word, session_id)
        result = found if result is None else result & found
        if not result:
            return set()
    return result or set()


class Searching(Environment):
    """Search across every session's history."""

    def search(self, query: str, session_id: str = "", limit: int = 50
               ) -> tuple[list[tuple[str, MessageRecord]], int]:
        """(session id, message) of the newest messages that have every word of `query`
        (in one session, when given), at most `limit`; and how many match in all."""
        wanted = words(query)
        if not wanted:
            return [], 0

        def find(txn: lmdb.Transaction) -> tuple[list[tuple[str, MessageRecord]], int]:
            found = matches(txn, self.dbs["search"], wanted, session_id)
            # A session's seqs run in time order: only each session's newest `limit` can be
            # among the newest `limit` overall, so only those are read.
            by_session: dict[str, list[int]] = {}
            for sid, seq in found:
                by_session.setdefault(sid, []).append(seq)
            hits = []
            for sid, seqs in by_session.items():
                for seq in heapq.nlargest(limit, seqs):
                    raw = txn.get(_message_key(sid, seq), db=self.dbs["messages"])
                    if raw is not None:
                        hits.append((sid, self._message_dec.decode(raw)))
            hits.sort(key=lambda hit: hit[1].created, reverse=True)
            return hits[:limit], len(found)
        return self.read(find)
