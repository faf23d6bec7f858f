"""Lexical ranking for recall: BM25 over a session's passages, by word stems.

Words are lower-cased, the most common English words left out, and reduced to their
Snowball stems ("moved", "moves" and "moving" are one term), so that a question need not
repeat the words of what it asks about. One index per session holds every passage of its
history (a compact posting list per term); it grows as messages are stored, and the
passages in the active context are left out when it ranks.
"""

import math
import re
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import snowballstemmer

from ctxkeep.daemon.retrieval.passages import Passage

_WORD = re.compile(r"[^\W_]{2,}|\d")
#: Common English words that say nothing of what a text is about (with what is left of a
#: contraction: "I've" is "ve", "don't" "don").
STOP = frozenset("""a about above after again all also am an and any are as at be because been
before being below between both but by can could did do does doing done down during each even
ever few for from further get got had has have having he her here hers herself him himself his
how i if in into is it its itself just let like many me might more most much must my myself no nor
not now of off on once one only or other our ours out over own same shall she should so some
still such than that the their theirs them then there these they this those through to too
under until up very was we well were what when where which while who whom why will with would
yes yet you your yours yourself
ve ll re don isn aren wasn weren doesn didn hasn haven hadn won wouldn couldn shouldn""".split())
_STEMS: dict[str, str] = {}
_STEMMER = snowballstemmer.stemmer("english")
#: The query terms scored, the most telling (weight × rarity) first.
MAX_TERMS = 24
#: Stems remembered (the distinct words of many sessions), after which the memo starts over.
_STEMS_KEPT = 200_000


def stem(word: str) -> str:
    found = _STEMS.get(word)
    if found is None:
        if len(_STEMS) >= _STEMS_KEPT:
            _STEMS.clear()
        found = _STEMS[word] = _STEMMER.stemWord(word)
    return found


def terms(text: str) -> list[str]:
    """The text's terms: stems of its words, common words left out."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOP]


#: How a question asks about the past, not what it asks about ("what did I tell you about",
#: "remind me", "we talked about"): in a query these words never make a match on their own.
PHRASING = frozenset(stem(w) for w in """tell told telling remind reminded remember remembered recall
recalled mention mentioned say said saying talk talked talking discuss discussed discussion ask asked
asking know knew think thought earlier previous previously ago last time times chat chatted conversation
again already please thanks thank help""".split())


#: How a question counts or totals ("how many … in total", "the number of", "altogether"):
#: the words ask for a sum, they do not say of what ("the total number of nodes" is no answer
#: to "how many fish in total").
_COUNTING = re.compile(r"\b(?:in total|(?:the )?(?:total )?number of|total of|altogether|all together|"
                       r"in all|combined|put together)\b", re.I)


#: "(do) for a living" asks of work: its "living" stems as "live" does, and would match where
#: someone lives and every living room ("What does Nate do for a living now?").
_FOR_A_LIVING = re.compile(r"\bfor a living\b", re.I)


def asked_terms(text: str) -> list[str]:
    """A message's terms as a query: its terms less the words of how it asks (PHRASING, how
    it counts) and its time stamps, "for a living" as the work it asks of."""
    return [t for t in terms(_FOR_A_LIVING.sub(" work ", _COUNTING.sub(" ", unstamped(text)))) if t not in PHRASING]


#: What the turn before weighs in a query (when asked with it), in all, against the new
#: message's terms: it points at what "it" or "she" is, and never outweighs the message.
CONTEXT_SHARE = 0.5


#: A time stamp as chat front-ends write one into a message ("[2023/05/30 (Tue) 22:26]",
#: "2023-05-30T22:26:00", "Tue, 30 May 2023 22:26"): it says when, not what about, and as
#: terms it would find every other message stamped the same way.
_STAMP = re.compile(
    r"\[?\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"(?:\s*\(?(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?\)?)?(?:,?\s*\d{1,2}:\d{2}(?::\d{2})?)?\]?"
    r"|\b(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+\d{1,2}\s+[a-z]{3,9}\s+\d{4}(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?",
    re.I)


def unstamped(text: str) -> str:
    """`text` without its time stamps (every one has a digit: a text without one is read once)."""
    return _STAMP.sub(" ", text) if _DIGIT.search(text) else text


_DIGIT = re.compile(r"\d")


def has_words(text: str) -> bool:
    """Whether `text` says anything beside its time stamps: a letter or a digit (one is
    enough: "猫" is a word)."""
    return _LETTER.search(unstamped(text)) is not None


_LETTER = re.compile(r"[^\W_]")


def query_terms(message: str | list[str], context: str = "") -> dict[str, float]:
    """A query's terms and their weights: the new message's (or its `asked_terms`, where
    the caller has them) at 1 each time they occur, the turn before's sharing CONTEXT_SHARE
    of the message's weight between them. Time stamps are not terms."""
    own = asked_terms(message) if isinstance(message, str) else message
    weights: dict[str, float] = {}
    around = asked_terms(context)
    if around:
        each = CONTEXT_SHARE * max(1, len(own)) / len(around)
        for term in around:
            weights[term] = weights.get(term, 0.0) + each
    for term in own:
        weights[term] = weights.get(term, 0.0) + 1.0
    return weights


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
