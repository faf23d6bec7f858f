"""Meaning-based ranking for recall: embeddings of a session's passages, and their cosine
to the new message's.

Vectors come from the model server's embedding model (`embed_model`, Ollama's /api/embed)
or, where it has none, from the built-in one (encoders.py), and are kept in the store's
embedding cache (by model and the text's SHA-256), so a passage is embedded once whatever
session or restart asks again. They are computed in the background (`Embedder`), a batch
at a time, as messages are stored and for a history that has none yet (an import, a store
from before recall): a turn never waits for a passage's vector to be computed (a new
index reads those the store has first), and what has none yet is ranked by words alone.
"""

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable

from ctxkeep.daemon.backends.protocol import ModelBackend, ModelCallError
from ctxkeep.daemon.jobs.giving_way import GivingWay
from ctxkeep.daemon.retrieval.embedded_text import EMBED_CHARS, digest, embedded
from ctxkeep.daemon.retrieval.encoders import BuiltinEncoder, Encoder, ServerEncoder
from ctxkeep.daemon.retrieval.lexical import has_words
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.retrieval.query_vectors import QueryVectors
from ctxkeep.daemon.retrieval.vectors import SemanticIndex
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import ErrorCode

log = logging.getLogger(__name__)

#: How long the embedder waits for a server that answers one request at a time to finish
#: streaming an answer.
BUSY_WAIT_S = 0.1
#: Texts sent to the embedding model in one call.
BATCH = 32
#: Passage vectors kept in memory after they were computed (the store keeps them all): a
#: call that read the store while another computed the same text takes them from here.
FRESH_KEPT = 256
#: Passages whose stored vectors a turn reads at once (`stored`).
STORED_BATCH = 1000
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
        #: Passage vectors being computed, and those computed last, by (encoder, digest): a
        #: text that level 2 and the background ask for at once is embedded once.
        self._asked: dict[tuple[str, str], asyncio.Future[dict[str, list[float]]]] = {}
        self._fresh: OrderedDict[tuple[str, str], list[float]] = OrderedDict()

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

    async def stored(self, source: Callable[[], tuple[list[Passage], SemanticIndex]], wait: float) -> None:
        """Fill the index, from where it stands, with the vectors the store already has of its
        passages — read, never computed: a branch's history, a session's after a restart —
        up to the first passage without one, for at most `wait` seconds. What a turn about to
        rank needs at once, where it is a batch or more behind; the background would give way
        to that very turn (giving_way)."""
        encoder = self.encoder()
        passages, index = source()
        if encoder is None or len(passages) - (index.done if index.model == encoder.name else 0) < BATCH:
            return  # (a turn or two behind, as after every answer: the background's)
        size = BATCH  # a first look: an import not embedded yet costs a turn one small read
        try:
            async with asyncio.timeout(wait):
                while True:
                    index.of(encoder.name)
                    start = index.done
                    batch = passages[start:start + size]
                    if not batch:
                        return
                    worded, digests, cached = await asyncio.to_thread(self._stored_of, encoder.name, batch, start)
                    if index.done != start or index.model != encoder.name:
                        return  # the background filled it meanwhile (or the embedder changed)
                    have = next((k for k, d in enumerate(digests) if d not in cached), len(digests))
                    index.add_many(worded[:have], [cached[d] for d in digests[:have]])
                    index.done = worded[have] if have < len(worded) else start + len(batch)
                    if have < len(worded):
                        return  # the background embeds the rest
                    size = STORED_BATCH
        except TimeoutError:
            return

    def _stored_of(self, model: str, batch: list[Passage], start: int) -> tuple[list[int], list[str], dict[str, list[float]]]:
        """(the ids of the batch's passages with words, their digests, the vectors the store
        has of them): run in a worker thread."""
        worded = [start + i for i, p in enumerate(batch) if has_words(p.text)]
        return worded, *self._cached(model, [embedded(batch[pid - start].text) for pid in worded])

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
        worded = [start + i for i, p in enumerate(batch) if has_words(p.text)]  # no vector for a
        self.working = True  # bare stamp or a zero-width space: like anything, alike to nothing
        try:
            digests, cached = await self._vectors(encoder, [embedded(passages[pid].text) for pid in worded])
        finally:
            self.working = False
        if index.done != start or index.model != encoder.name:  # rebuilt meanwhile
            return True
        index.add_many(worded, [cached[d] for d in digests])
        index.done = start + len(batch)
        if start + len(batch) >= 2000 and (start // 2000) != ((start + len(batch)) // 2000):
            log.info("session=%s: %d passages embedded for recall", session_id, index.done)
        return index.done < len(passages)

    async def passage_vectors(self, texts: list[str]) -> list[list[float] | None] | None:
        """The vectors of texts as recall embeds a passage (`embedded`), from the store's
        cache or the encoder (then kept there, for recall too): what level 2 of compaction
        judges older messages by, without embedding them again. None for a text without
        words; None for all where no encoder embeds now or it failed (words decide then)."""
        encoder = self.encoder()
        if encoder is None:
            return None
        worded = {i: embedded(t) for i, t in enumerate(texts) if has_words(t)}
        try:
            digests, cached = await self._vectors(encoder, list(worded.values()))
        except ModelCallError as exc:
            if exc.code is not ErrorCode.BUSY:
                self._failed(exc)
            return None
        found = dict(zip(worded, (cached[d] for d in digests)))
        return [found.get(i) for i in range(len(texts))]

    async def _vectors(self, encoder: Encoder, texts: list[str]) -> tuple[list[str], dict[str, list[float]]]:
        """(each text's digest, the vectors of all): from the store's cache (or those just
        computed, or being computed by another call), the rest from `encoder`, then kept."""
        digests, cached = await asyncio.to_thread(self._cached, encoder.name, texts)
        for d in dict.fromkeys(digests):
            key = (encoder.name, d)
            if d not in cached and key in self._fresh:
                cached[d] = self._fresh[key]
            elif d not in cached and key in self._asked:
                cached.update(await asyncio.shield(self._asked[key]))  # ({} where it failed: asked again)
        missing = {d: t for d, t in zip(digests, texts) if d not in cached}
        if not missing:
            return digests, cached
        done: asyncio.Future[dict[str, list[float]]] = asyncio.get_running_loop().create_future()
        self._asked.update(dict.fromkeys(((encoder.name, d) for d in missing), done))
        fresh: dict[str, list[float]] = {}
        try:
            fresh = dict(zip(missing.keys(), await encoder.passages(list(missing.values()))))
            await self.store.off_loop(self.store.caches.save_embeddings, encoder.name, fresh)
        finally:
            for d in missing:
                self._asked.pop((encoder.name, d), None)
            for d, vector in fresh.items():
                self._fresh[(encoder.name, d)] = vector
            while len(self._fresh) > FRESH_KEPT:
                self._fresh.popitem(last=False)
            done.set_result(fresh)
        cached.update(fresh)
        return digests, cached

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
