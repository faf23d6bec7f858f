"""Relevance of older messages to the recent turns: BM25 over words, and meaning.

By meaning, each message is judged by the vector recall embeds it by (its first passage's
opening, semantic.Embedder: the server's embedding model or the built-in one), from the
store's cache that recall fills in the background, so a level-2 pass embeds little or
nothing again; the recent messages' vectors are averaged into the direction the older ones
are compared with. Without an embedder, or where it fails, words alone decide. Messages
with file references or code blocks rank higher.
"""

import asyncio
import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from itertools import chain

import numpy as np

from ctxkeep.daemon.compaction.postings import Postings
from ctxkeep.daemon.context.per_message import PerMessage
from ctxkeep.daemon.retrieval.passages import passages
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.daemon.store.word_index import STOP

_WORD = re.compile(r"[a-z0-9_]{2,}")


def words(text: str) -> list[str]:
    """Lower-cased words of a text, stop words left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP]  # as the search index does


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """(word -> count, number of words) of a text."""
    found = words(text)
    return dict(Counter(found)), len(found)


class TermCache(PerMessage[tuple[dict[str, int], int]]):
    """Stored messages' word counts by (session, seq), and the inverted index level 2
    scores through."""

    def __init__(self) -> None:
        super().__init__(lambda m: term_counts(m.content))
        self.postings = Postings()


def bm25(documents: Sequence[Sequence[str]], query: Sequence[str], k1: float = 1.5,
         b: float = 0.75) -> list[float]:
    """BM25 score of each document (a list of words) for the query."""
    counted = []
    for d in documents:
        counts: dict[str, int] = {}
        for w in d:
            counts[w] = counts.get(w, 0) + 1
        counted.append((counts, len(d)))
    return bm25_counts(counted, query, k1, b)


def bm25_counts(documents: Sequence[tuple[dict[str, int], int]], query: Sequence[str],
                k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 from each document's word counts and length; only query terms are looked at."""
    n = len(documents)
    if not n or not query:
        return [0.0] * n
    terms = Counter(query)
    avg = sum(length for _, length in documents) / n or 1.0
    wanted = frozenset(terms)
    shared = [wanted.intersection(counts) for counts, _ in documents]  # set operations run in C
    df = Counter(chain.from_iterable(shared))
    weight = {t: terms[t] * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * (k1 + 1) for t in terms}
    base, per_length = k1 * (1 - b), k1 * b / avg
    scores = []
    for (counts, length), found in zip(documents, shared):
        total = 0.0
        if found:  # a plain loop: this is the hot one at 10,000 messages
            norm = base + per_length * length
            for t in found:
                c = counts[t]
                total += weight[t] * c / (c + norm)
        scores.append(total)
    return scores


#: More candidates than this are compared off the event loop.
ON_LOOP_TEXTS = 64

#: Vectors of texts as recall embeds its passages (semantic.Embedder.passage_vectors): None
#: for a text without words, None for all where nothing embeds.
PassageVectors = Callable[[list[str]], Awaitable[list[list[float] | None] | None]]


def _boost(message: MessageRecord) -> float:
    return 1.5 if message.files or "```" in message.content else 1.0


def recalled_text(message: MessageRecord) -> str:
    """What recall embeds of a message (its first passage; the whole where it has none):
    level 2 judges it by the same vector, from the same cache."""
    found = passages(message)
    return found[0].text if found else message.content


def by_meaning(candidates: list[list[float] | None], recent: list[list[float] | None]) -> list[float]:
    """Each candidate's cosine with the recent messages' mean direction (0 where either
    has no vector, and never below 0)."""
    kept = [np.asarray(v, dtype=np.float32) for v in recent if v is not None]
    units = [v / n for v in kept if (n := np.linalg.norm(v))]
    if not units:
        return [0.0] * len(candidates)
    centre = np.mean(units, axis=0)
    centre /= np.linalg.norm(centre) or 1.0
    out = []
    for v in candidates:
        row = np.asarray(v, dtype=np.float32) if v is not None else None
        length = float(np.linalg.norm(row)) if row is not None else 0.0
        out.append(max(0.0, float(row @ centre) / length) if row is not None and length else 0.0)
    return out


def by_words(candidates: list[MessageRecord], recent: list[MessageRecord], terms: TermCache,
             session_id: str) -> list[float]:
    """Each candidate's BM25 score for the recent messages' words, the best as 1."""
    query = [w for m in recent for w in words(m.content)]
    if all(m.seq >= 0 for m in candidates):  # stored messages: through the session's index
        keyword = terms.postings.bm25(session_id, candidates, query, lambda m: terms.of(session_id, m))
    else:
        keyword = bm25_counts([terms.of(session_id, m) for m in candidates], query)
    top = max(keyword, default=0.0) or 1.0
    return [k / top for k in keyword]


async def score(candidates: list[MessageRecord], recent: list[MessageRecord], *,
                terms: TermCache, session_id: str, vectors: PassageVectors | None = None) -> list[float]:
    """A relevance score per candidate (higher: keep): BM25 normalized, plus the cosine of
    its vector with the recent messages' where recall's embedder has them (`vectors`), times
    the boost for file references and code. The candidates are stored messages of
    `session_id`, whose word counts `terms` keeps."""
    # thousands of candidates after a big import: counted off the event loop
    scores = await asyncio.to_thread(by_words, candidates, recent, terms, session_id)
    if vectors is not None and candidates:
        found = await vectors([recalled_text(m) for m in [*candidates, *recent]])
        if found is not None:
            mine, theirs = found[:len(candidates)], found[len(candidates):]
            near = await asyncio.to_thread(by_meaning, mine, theirs) if len(candidates) > ON_LOOP_TEXTS \
                else by_meaning(mine, theirs)
            scores = [s + c for s, c in zip(scores, near)]
    return [s * _boost(m) for s, m in zip(scores, candidates)]
