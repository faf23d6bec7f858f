"""Level 2's BM25 through an inverted index kept per session: term -> {seq: count} over the
messages last scored. A plan looks only at the postings of the query's terms (the work is
the number of (term, message) matches, not every word of every message), and the index
follows the candidates from one plan to the next by the messages that came and went.

It scores exactly what `relevance.bm25_counts` scores (a property test holds the two equal).
"""

import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence

from ctxkeep.daemon.store.records import MessageRecord

#: A stored message's word counts and length (relevance.TermCache).
Counts = Callable[[MessageRecord], tuple[dict[str, int], int]]

#: Sessions whose index is kept (the ones compacting now and lately).
SESSIONS_KEPT = 8


class SessionPostings:
    """The index of one session's current candidates."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        #: Each indexed message's word counts and length (TermCache's own objects).
        self.docs: dict[int, tuple[dict[str, int], int]] = {}
        self.total_length = 0

    def follow(self, candidates: Sequence[MessageRecord], counts: Counts) -> None:
        """Index exactly `candidates`: add the new ones, drop those no longer there."""
        wanted = {m.seq: m for m in candidates}
        for seq in [s for s in self.docs if s not in wanted]:
            words, length = self.docs.pop(seq)
            for term in words:
                found = self.postings[term]
                del found[seq]
                if not found:
                    del self.postings[term]
            self.total_length -= length
        for seq, m in wanted.items():
            if seq not in self.docs:
                words, length = self.docs[seq] = counts(m)
                for term, count in words.items():
                    self.postings.setdefault(term, {})[seq] = count
                self.total_length += length

    def bm25(self, order: Sequence[int], query: Sequence[str], k1: float = 1.5,
             b: float = 0.75) -> list[float]:
        """Scores of the indexed messages, in the order of `order` (their seqs)."""
        n = len(self.docs)
        if not n or not query:
            return [0.0] * len(order)
        base, per_length = k1 * (1 - b), k1 * b / (self.total_length / n or 1.0)
        norm = {seq: base + per_length * length for seq, (_, length) in self.docs.items()}
        scores = dict.fromkeys(order, 0.0)
        for term, times in Counter(query).items():
            found = self.postings.get(term)
            if not found:
                continue
            df = len(found)
            weight = times * math.log(1 + (n - df + 0.5) / (df + 0.5)) * (k1 + 1)
            for seq, count in found.items():
                scores[seq] += weight * count / (count + norm[seq])
        return [scores[seq] for seq in order]


class Postings:
    """The indexes of the sessions compacted lately."""

    def __init__(self, sessions: int = SESSIONS_KEPT) -> None:
        self.sessions = sessions
        self._kept: OrderedDict[str, SessionPostings] = OrderedDict()

    def bm25(self, session_id: str, candidates: Sequence[MessageRecord], query: Sequence[str],
             counts: Counts) -> list[float]:
        """BM25 of each candidate (stored messages of `session_id`) for `query`."""
        index = self._kept.pop(session_id, None) or SessionPostings()
        self._kept[session_id] = index
        while len(self._kept) > self.sessions:
            self._kept.popitem(last=False)
        index.follow(candidates, counts)
        return index.bm25([m.seq for m in candidates], query)
