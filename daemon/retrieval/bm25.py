"""Lexical ranking for recall: BM25 over a session's passages, by the terms of lexical.py.

One index per session holds every passage of its history (a compact posting list per term);
it grows as messages are stored, and the passages in the active context are left out when it
ranks.
"""

import math
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ctxkeep.daemon.retrieval.lexical import terms
from ctxkeep.daemon.retrieval.passages import Passage

#: The query terms scored, the most telling (weight × rarity) first.
MAX_TERMS = 24


def counts_of(p: Passage) -> Counter[str]:
    """A passage's terms, each with how often it occurs."""
    return Counter(terms(p.text))


@dataclass(frozen=True)
class Gone:
    """Passages to leave out of an index's statistics: how many hold each term, how many
    there are, their terms in all."""

    terms: Counter[str]
    passages: int
    length: int


def gone_of(passages: Iterable[Passage]) -> Gone:
    """What `LexicalIndex.forget` takes for `passages` (their terms read again: run it in a
    worker thread for many)."""
    held: Counter[str] = Counter()
    n = length = 0
    for p in passages:
        counts = counts_of(p)
        held.update(counts.keys())
        n += 1
        length += sum(counts.values())
    return Gone(held, n, length)


class LexicalIndex:
    """BM25 over one session's passages (k1 = 1.2, b = 0.75)."""

    K1, B = 1.2, 0.75

    def __init__(self) -> None:
        self.passages: list[Passage] = []
        #: Each passage's message seq and length in terms, by passage id.
        self.seqs = array("q")
        self.lengths = array("I")
        self.total = 0
        #: term -> (passage ids, counts), in the order the passages were added.
        self.postings: dict[str, tuple[array, array]] = {}
        #: Seqs indexed so far run below this.
        self.next_seq = 0
        #: Of the passages left out for good (a deleted session's in memory's index): how many
        #: hold each term, how many there are, their terms in all. The statistics that say
        #: how telling a term is (BM25's idf, `rare`) count only the passages that remain.
        self.gone: Counter[str] = Counter()
        self.gone_passages = 0
        self.gone_length = 0

    def add(self, passages: Iterable[Passage], counted: Iterable[Counter[str]] | None = None) -> None:
        """Passages after those indexed; with `counted`, each one's term counts (computed
        elsewhere, e.g. in a worker thread: `counts`)."""
        passages = list(passages)
        for p, counts in zip(passages, counted if counted is not None else map(counts_of, passages)):
            pid = len(self.passages)
            self.passages.append(p)
            self.seqs.append(p.seq)
            length = sum(counts.values())
            self.lengths.append(length)
            self.total += length
            for term, n in counts.items():
                found = self.postings.get(term)
                if found is None:
                    found = self.postings[term] = (array("I"), array("H"))
                found[0].append(pid)
                found[1].append(min(n, 65535))
            self.next_seq = max(self.next_seq, p.seq + 1)

    def forget(self, gone: "Gone") -> None:
        """Passages left out (`gone_of` them: deleted, private, forgotten): no longer counted
        in the statistics."""
        self.gone.update(gone.terms)
        self.gone_passages += gone.passages
        self.gone_length += gone.length

    def unforget(self, back: "Gone") -> None:
        """Passages `forget` left out, counted again (a session shared again)."""
        self.gone.subtract(back.terms)
        self.gone_passages -= back.passages
        self.gone_length -= back.length

    def live(self) -> int:
        """The passages that remain (all but those forgotten)."""
        return len(self.passages) - self.gone_passages

    def df(self, term: str) -> int:
        """How many of the passages that remain hold `term`."""
        found = self.postings.get(term)
        return 0 if found is None else len(found[0]) - self.gone.get(term, 0)

    def expansion(self, ranked: list[tuple[int, float]], query: Mapping[str, float],
                  top: int = 3, near: float = 0.8, rare: float = 0.02, most: int = 4) -> dict[str, float]:
        """Pseudo-relevance feedback, for a second hop: the rarest terms of the best
        passages (at most `top`, each within `near` of the best score) that the query lacks
        (a name the first hop found: "the person who adopted the parrot" → the name, to
        find where that person lives), less those more than `top` of the passages the first
        hop found hold too: a word of the kind of thing asked about ("adopted", said of
        every pet), not of the one found."""
        n = self.live()
        found: dict[str, int] = {}
        best = ranked[0][1] if ranked else 0.0
        for pid, _ in [(pid, s) for pid, s in ranked[:top] if s >= near * best]:
            for term in set(terms(self.passages[pid].text)):
                df = self.df(term)
                if term not in query and 0 < df <= max(2, rare * n):
                    found[term] = min(found.get(term, df), df)
        matched = np.fromiter((pid for pid, _ in ranked), dtype=np.uint32)
        shared = lambda term: int(np.isin(np.frombuffer(self.postings[term][0], dtype=np.uint32), matched).sum())
        return dict.fromkeys(sorted((t for t in found if shared(t) <= top), key=found.__getitem__)[:most], 1.0)

    def rare(self, query: Iterable[str], share: float = 0.05, least: int = 2, unseen: bool = False) -> frozenset[str]:
        """The query's terms found in at most `share` of the passages (or `least`): what a
        match on says what the message is about, where a common word does not. `unseen`:
        with those found in none."""
        most = max(least, share * self.live())
        fewest = 0 if unseen else 1
        return frozenset(t for t in query if fewest <= self.df(t) <= most)

    def rank(self, query: Mapping[str, float], leave_out: Collection[int],
             limit: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(passage id, score) of the best `limit` passages for the query terms (each with
        its weight), best first, leaving out passages of the messages `leave_out` names
        (and, with `allowed`, a flag per passage id, those it marks False).
        Scored with numpy over the posting lists of the query's terms (the most telling
        MAX_TERMS of them), so its cost is the postings read, not the passages."""
        n = self.live()
        if not n:
            return []
        lengths = np.frombuffer(self.lengths, dtype=np.uint32)
        average = (self.total - self.gone_length) / n or 1.0
        scores = np.zeros(len(self.passages), dtype=np.float64)
        weighted = []
        for term, times in query.items():
            found = self.postings.get(term)
            if found is None:
                continue
            df = max(1, len(found[0]) - self.gone.get(term, 0))
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            if idf >= 0.05:  # a term in nearly every passage says nothing
                weighted.append((times * idf, found))
        for weight, (ids, counts) in sorted(weighted, key=lambda item: -item[0])[:MAX_TERMS]:
            pids = np.frombuffer(ids, dtype=np.uint32)
            c = np.frombuffer(counts, dtype=np.uint16).astype(np.float64)
            norm = self.K1 * (1 - self.B + self.B * lengths[pids] / average)
            scores[pids] += weight * (self.K1 + 1) * c / (c + norm)
        hits = np.flatnonzero(scores)
        if allowed is not None and len(hits):
            hits = hits[allowed[hits]]
        if leave_out and len(hits):
            seqs = np.frombuffer(self.seqs, dtype=np.int64)[hits]
            hits = hits[~np.isin(seqs, np.fromiter(leave_out, dtype=np.int64, count=len(leave_out)))]
        if len(hits) > limit:
            hits = hits[np.argpartition(-scores[hits], limit)[:limit]]
        ordered = sorted(hits.tolist(), key=lambda pid: (-scores[pid], -pid))
        return [(pid, float(scores[pid])) for pid in ordered]
