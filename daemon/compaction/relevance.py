"""Relevance of older messages to the recent turns: BM25 over words, and embeddings.

Embeddings come from Ollama's /api/embed (model configurable, default
nomic-embed-text), computed lazily and cached in LMDB by content hash and
model. Any embedding failure falls back to keywords alone. Messages with file
references or code blocks rank higher.
"""

import asyncio
import hashlib
import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from itertools import chain

from ctxkeep.daemon.backends.protocol import ModelBackend, ModelCallError
from ctxkeep.daemon.compaction.postings import Postings
from ctxkeep.daemon.context.per_message import PerMessage
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.store.word_index import STOP

log = logging.getLogger(__name__)
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


def similarities(vectors: list[list[float]], target: list[float]) -> list[float]:
    """Each vector's cosine with `target` (0 where either has no length)."""
    return [cosine(v, target) for v in vectors]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity; 0 when either vector has no length."""
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


#: More texts than this are hashed and looked up off the event loop.
ON_LOOP_TEXTS = 64
#: Texts sent to the embedding model in one call.
EMBED_BATCH = 256


def _boost(message: MessageRecord) -> float:
    return 1.5 if message.files or "```" in message.content else 1.0


async def embeddings(backend: ModelBackend, store: Store, model: str,
                     texts: list[str]) -> list[list[float]] | None:
    """Vectors for `texts`, from the cache or /api/embed (EMBED_BATCH texts a call: a
    request of thousands would be written on the event loop at once); None on any failure."""
    def cached() -> tuple[list[str], dict[str, list[float]]]:
        digests = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        return digests, store.caches.embeddings(model, list(dict.fromkeys(digests)))
    # many texts: hashed and read in a worker thread, not on the event loop
    digests, vectors = await asyncio.to_thread(cached) if len(texts) > ON_LOOP_TEXTS else cached()
    missing = [(d, t) for d, t in zip(digests, texts) if d not in vectors]
    if missing:
        try:
            unique = dict(missing)
            asked = list(unique.values())
            got = [v for i in range(0, len(asked), EMBED_BATCH)
                   for v in await backend.embed(model, asked[i:i + EMBED_BATCH])]
        except ModelCallError as exc:
            log.info("embeddings unavailable (%s): keywords alone", exc.message)
            return None
        fresh = dict(zip(unique.keys(), got))
        await store.off_loop(store.caches.save_embeddings, model, fresh)
        vectors.update(fresh)
    return [vectors[d] for d in digests]


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
                backend: ModelBackend | None, store: Store, embed_model: str,
                terms: TermCache, session_id: str) -> list[float]:
    """A relevance score per candidate (higher: keep): BM25 normalized, plus cosine when
    embeddings work, times the boost for file references and code. The candidates are
    stored messages of `session_id`, whose word counts `terms` keeps."""
    # thousands of candidates after a big import: counted off the event loop
    scores = await asyncio.to_thread(by_words, candidates, recent, terms, session_id)
    if backend is not None and embed_model and candidates:
        texts = [m.content[:4000] or " " for m in candidates] + [" ".join(m.content[:2000] for m in recent) or " "]
        vectors = await embeddings(backend, store, embed_model, texts)
        if vectors is not None:
            near = await asyncio.to_thread(similarities, vectors[:-1], vectors[-1]) \
                if len(candidates) > ON_LOOP_TEXTS else similarities(vectors[:-1], vectors[-1])
            scores = [s + max(0.0, c) for s, c in zip(scores, near)]
    return [s * _boost(m) for s, m in zip(scores, candidates)]
