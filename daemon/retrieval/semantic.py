"""Meaning-based ranking for recall: embeddings of a session's passages, and their cosine
to the new message's.

Vectors come from the model server's embedding model (`embed_model`, Ollama's /api/embed)
or, where it has none, from the built-in one (encoders.py), and are kept in the store's
embedding cache (by model and the text's SHA-256), so a passage is embedded once whatever
session or restart asks again. They are computed in the background (`Embedder`), a batch
at a time, as messages are stored and for a history that has none yet (an import, a store
from before recall): a turn never waits for a passage's vector, and what has none yet is
ranked by words alone.
"""

import asyncio
import hashlib
import logging
import math
from collections.abc import Callable

import numpy as np

from ctxkeep.daemon.backends.protocol import ModelBackend, ModelCallError
from ctxkeep.daemon.jobs.giving_way import GivingWay
from ctxkeep.daemon.retrieval.encoders import BuiltinEncoder, Encoder, ServerEncoder
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.retrieval.query_vectors import QueryVectors
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import ErrorCode

log = logging.getLogger(__name__)

#: How long the embedder waits for a server that answers one request at a time to finish
#: streaming an answer.
BUSY_WAIT_S = 0.1
#: Texts sent to the embedding model in one call.
BATCH = 32
#: Characters of a passage that are embedded: its opening, which says what it is about.
#: Measured on LongMemEval's dev split with the built-in e5 (11 histories, 25 evidence
#: turns): the evidence ranks as well at 600 as at 2,000 (median 5.5 against 6; as many in
#: the top 10 and 30), and embedding takes a fifth of the time (126 against 571 ms a long
#: passage on one 2-core machine) — CPU a local model needs.
EMBED_CHARS = 600
#: Standard deviations above the mean cosine a passage must be to be ranked.
STAND_OUT = 3.0


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class SemanticIndex:
    """Unit vectors of one session's passages (those that have one so far), rows of a
    matrix that grows by doubling (a vector added costs one row, not a copy of all)."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self._matrix: np.ndarray | None = None
        #: Passage ids below this were looked at (embedded, or found in the cache).
        self.done = 0
        #: The encoder its vectors are from (encoders.Encoder.name).
        self.model = ""

    def of(self, model: str) -> "SemanticIndex":
        """The index, emptied when its vectors are another model's than `model` (the
        embedder changed: the server's model came or went)."""
        if model != self.model:
            self.ids, self._matrix, self.done, self.model = [], None, 0, model
        return self

    def add(self, pid: int, vector: list[float] | np.ndarray) -> None:
        v = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(v))
        if norm == 0 or v.ndim != 1:
            return
        if self._matrix is None:
            self._matrix = np.empty((64, v.shape[0]), dtype=np.float32)
        if v.shape[0] != self._matrix.shape[1]:
            return  # another model's: left out
        if len(self.ids) == self._matrix.shape[0]:
            self._matrix = np.concatenate([self._matrix, np.empty_like(self._matrix)])
        self._matrix[len(self.ids)] = v / norm
        self.ids.append(pid)

    def add_many(self, pids: list[int], vectors: list[list[float]]) -> None:
        """`add` for each; vectors of one size are converted together (a batch's are)."""
        if len({len(v) for v in vectors}) != 1:
            for pid, vector in zip(pids, vectors):
                self.add(pid, vector)
            return
        rows = np.asarray(vectors, dtype=np.float32)
        if self._matrix is None:
            self._matrix = np.empty((64, rows.shape[1]), dtype=np.float32)
        if rows.shape[1] != self._matrix.shape[1]:
            return  # another model's: left out
        norms = np.linalg.norm(rows, axis=1)
        keep = norms > 0
        rows, kept = rows[keep] / norms[keep, None], [pid for pid, k in zip(pids, keep) if k]
        while len(self.ids) + len(kept) > self._matrix.shape[0]:
            self._matrix = np.concatenate([self._matrix, np.empty_like(self._matrix)])
        self._matrix[len(self.ids):len(self.ids) + len(kept)] = rows
        self.ids.extend(kept)

    def nearest(self, query: list[float], share: float, least: int) -> set[int]:
        """The ids of the passages nearest `query`: the `share` of all, at least `least` of
        them, and any as near as the last of those (where the vectors tell nothing apart, all)."""
        if self._matrix is None or not self.ids:
            return set()
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (self._matrix.shape[1],) or not np.linalg.norm(q):
            return set()
        scores = self._matrix[:len(self.ids)] @ (q / np.linalg.norm(q))
        taken = min(len(scores), max(least, math.ceil(share * len(scores))))
        floor = float(np.partition(scores, len(scores) - taken)[len(scores) - taken])
        return {self.ids[row] for row in np.flatnonzero(scores >= floor)}

    def rank(self, query: list[float], skip: Callable[[int], bool], limit: int,
             stand_out: float = STAND_OUT) -> list[tuple[int, float]]:
        """(passage id, cosine) of the `limit` nearest passages, nearest first, of those
        that stand out: `stand_out` deviations nearer than the passages are on average
        (embeddings find every text somewhat alike; a question about nothing said before
        recalls nothing), leaving out the passage ids `skip` names."""
        if self._matrix is None or not self.ids:
            return []
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (self._matrix.shape[1],) or not np.linalg.norm(q):
            return []
        scores = self._matrix[:len(self.ids)] @ (q / np.linalg.norm(q))
        floor = float(scores.mean() + stand_out * scores.std())
        above = np.flatnonzero((scores >= floor) & (scores > 0))  # a few in a hundred: sorted alone
        out: list[tuple[int, float]] = []
        for row in above[np.argsort(-scores[above], kind="stable")]:
            pid = self.ids[row]
            if skip(pid):
                continue
            out.append((pid, float(scores[row])))
            if len(out) == limit:
                break
        return out


class Embedder:
    """Computes passage vectors in the background, one session's batch at a time."""

    def __init__(self, store: Store, backend: ModelBackend, model: Callable[[], str],
                 builtin: Callable[[], bool] = lambda: True, giving_way: GivingWay | None = None) -> None:
        self.store = store
        #: Turns starting now: each batch waits for none to be (giving_way.py).
        self.giving_way = giving_way or GivingWay()
        self.backend = backend
        self.model = model
        self.builtin = builtin
        #: Why the server's embedding model is not available ("" when it is, or not tried yet).
        self.unavailable = ""
        self.working = False
        self._wanted: dict[str, Callable[[], tuple[list[Passage], SemanticIndex]]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._server: ServerEncoder | None = None
        self._builtin: BuiltinEncoder | None = None
        self._queries = QueryVectors()

    def encoder(self) -> Encoder | None:
        """Who embeds now: the server's embedding model while it answers, else the built-in
        one (where allowed and installed), else none (recall by words alone)."""
        model = self.model()
        if model and not self.server_out():
            if self._server is None or self._server.name != model:
                self._server = ServerEncoder(self.backend, model)
            return self._server
        if self.builtin() and BuiltinEncoder.available():
            if self._builtin is None:
                self._builtin = BuiltinEncoder()
            return self._builtin
        return None

    def server_out(self) -> str:
        """Why the server's embedding model cannot embed now, as far as is known without
        asking it: a call failed (`unavailable`), or the model server is not reachable
        ("" when neither; the built-in embedder stands in meanwhile)."""
        if self.unavailable:
            return self.unavailable
        status = self.backend.status
        return "" if status.reachable or not status.checked else "the model server is not reachable"

    def current(self) -> str:
        """The name of the encoder that embeds now ("" for none)."""
        encoder = self.encoder()
        return encoder.name if encoder is not None else ""

    def want(self, session_id: str, source: Callable[[], tuple[list[Passage], SemanticIndex]]) -> None:
        """Have the session's passages embedded (`source` gives them and the index to fill)."""
        self._wanted[session_id] = source
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="embedder")

    def behind(self) -> int:
        """Passages waiting for their vectors, in the sessions wanted."""
        left = 0
        for source in list(self._wanted.values()):
            passages, index = source()
            left += max(0, len(passages) - index.done)
        return left

    async def vector(self, text: str, wait: float) -> list[float] | None:
        """The vector of one text (a new message, as a query), if it comes within `wait`
        seconds; None otherwise (the turn ranks by words alone). A text asked for lately
        is not asked again."""
        encoder = self.encoder()
        if encoder is None:
            return None
        asked = self._queries.call(encoder, text[:EMBED_CHARS])
        try:
            async with asyncio.timeout(wait):  # not wait_for: on 3.11 it may swallow a cancel
                vector = await asyncio.shield(asked)
        except ModelCallError as exc:
            if exc.code is not ErrorCode.BUSY:  # refused: not asked again until the server changes
                self._failed(exc)
            return None
        except (TimeoutError, ValueError):
            return None
        return vector

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._wanted:
                await self.giving_way.clear()
                session_id, source = next(iter(self._wanted.items()))
                try:
                    more = await self._batch(session_id, source)
                except ModelCallError as exc:
                    if exc.code is ErrorCode.BUSY:  # the server streams an answer: later
                        await asyncio.sleep(BUSY_WAIT_S)
                        continue
                    self._failed(exc)
                    self._wanted.clear()
                    break
                except Exception:  # never let the embedder die
                    log.exception("session=%s embedding failed", session_id)
                    more = False
                if not more:
                    self._wanted.pop(session_id, None)
                await asyncio.sleep(0)  # batches found in the cache await nothing: let others in

    def _failed(self, exc: ModelCallError) -> None:
        if not self.unavailable:
            log.info("recall ranks by words alone: %s", exc.message)
        self.unavailable = exc.message

    def retry(self) -> None:
        """The model server changed (back, or a model pulled): try embeddings again."""
        self.unavailable = ""

    async def _batch(self, session_id: str, source: Callable[[], tuple[list[Passage], SemanticIndex]]) -> bool:
        """One batch of the session's passages that have no vector yet; True while more
        are left."""
        encoder = self.encoder()
        if encoder is None:
            return False
        passages, index = source()
        index.of(encoder.name)
        start = index.done
        batch = passages[start:start + BATCH]
        if not batch:
            return False
        self.working = True
        try:
            texts = [p.text[:EMBED_CHARS] for p in batch]
            digests, cached = await asyncio.to_thread(self._cached, encoder.name, texts)
            missing = {d: t for d, t in zip(digests, texts) if d not in cached}
            if missing:
                vectors = await encoder.passages(list(missing.values()))
                fresh = dict(zip(missing.keys(), vectors))
                await self.store.off_loop(self.store.caches.save_embeddings, encoder.name, fresh)
                cached.update(fresh)
        finally:
            self.working = False
        if index.done != start or index.model != encoder.name:  # rebuilt meanwhile
            return True
        index.add_many(list(range(start, start + len(batch))), [cached[d] for d in digests])
        index.done = start + len(batch)
        if start + len(batch) >= 2000 and (start // 2000) != ((start + len(batch)) // 2000):
            log.info("session=%s: %d passages embedded for recall", session_id, index.done)
        return index.done < len(passages)

    def _cached(self, model: str, texts: list[str]) -> tuple[list[str], dict[str, list[float]]]:
        """(each text's digest, the vectors the store has of them): run in a worker thread."""
        digests = [digest(t) for t in texts]
        return digests, self.store.caches.embeddings(model, list(dict.fromkeys(digests)))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._builtin is not None:
            self._builtin.close()
