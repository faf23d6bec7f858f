"""A word index of every stored message, kept in the transaction that stores it (a
question awaiting its answer: in the one that ends its turn, so that the commit the
client waits for stays small).

Key: the word, a NUL, the session id and the message's seq (keys.word_key); no value.
A search reads, for each word of the query, the keys that start with it (only those,
however large the history), and intersects them: every word must occur. Words are the
lower-cased runs of letters, digits and `_` of two characters or more, without the most
common English words.
"""

import re
from collections.abc import Iterable
from typing import Any

from ctxkeep.daemon.store import keys
from ctxkeep.daemon.store.txn import Txn

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


def add(txn: Txn, db: Any, session_id: str, seq: int, text: str) -> None:
    for word in words(text):
        txn.put(keys.word_key(word, session_id, seq), b"", db=db)


def remove(txn: Txn, db: Any, session_id: str, seq: int, text: str) -> None:
    for word in words(text):
        txn.delete(keys.word_key(word, session_id, seq), db=db)


def postings(txn: Txn, db: Any, word: str, session_id: str = "") -> set[tuple[str, int]]:
    """(session id, seq) of every message with `word` (in one session, when given)."""
    start = keys.word_key(word, session_id)
    found: set[tuple[str, int]] = set()
    cursor = txn.cursor(db=db)
    if not cursor.set_range(start):
        return found
    after_word = len(keys.word_key(word))
    for key in cursor.iternext(values=False):
        if not key.startswith(start):
            break
        rest = key[after_word:]
        found.add((keys.session_of(rest), keys.number_of(rest)))
    return found


def matches(txn: Txn, db: Any, query_words: Iterable[str],
            session_id: str = "") -> set[tuple[str, int]]:
    """Messages that have every word (the rarest word's postings are read first)."""
    result: set[tuple[str, int]] | None = None
    for word in sorted(set(query_words), key=len, reverse=True):  # longer words are rarer
        found = postings(txn, db, word, session_id)
        result = found if result is None else result & found
        if not result:
            return set()
    return result or set()
