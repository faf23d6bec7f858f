"""Recall's vectors (retrieval/semantic.py): a batch added at once is the same index as its
vectors added one by one (the embedder adds batches; the loop must not pay per row)."""

import numpy as np

from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.vectors import SemanticIndex


def test_a_batch_added_at_once_equals_its_vectors_added_one_by_one():
    rng = np.random.default_rng(1)
    vectors = [list(map(float, v)) for v in rng.normal(size=(150, 64))]
    vectors[3] = [0.0] * 64  # no length: left out either way
    one, many = SemanticIndex(), SemanticIndex()
    for pid, v in enumerate(vectors):
        one.add(pid, v)
    many.add_many(list(range(100)), vectors[:100])  # past the first 64 rows: it grows
    many.add_many(list(range(100, 150)), vectors[100:])
    many.add_many([150, 151], [[1.0, 2.0], [1.0] * 64])  # another size: one by one, the odd one left out
    one.add(151, [1.0] * 64)
    assert many.ids == one.ids and 3 not in many.ids and 150 not in many.ids
    found, alone = many.rank(vectors[10], lambda pid: False, 20), one.rank(vectors[10], lambda pid: False, 20)
    assert found and found[0][0] == 10 and [p for p, _ in found] == [p for p, _ in alone]
    assert np.allclose([c for _, c in found], [c for _, c in alone], atol=1e-6)


def test_the_nearest_are_a_share_of_all_at_least_a_few_and_all_where_nothing_tells_them_apart():
    """`nearest` (recall's gate: words and meaning agree): the given share of the passages
    nearest the query, at least `least` of them, ties with the last included; vectors that
    tell nothing apart (the same cosine for every passage) leave none out."""
    rng = np.random.default_rng(2)
    index = SemanticIndex()
    vectors = rng.normal(size=(400, 16))
    index.add_many(list(range(400)), [list(map(float, v)) for v in vectors])
    query = vectors[7] + 0.1 * rng.normal(size=16)
    cosines = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
    best = set(map(int, np.argsort(-cosines)[:10]))
    assert index.nearest(list(map(float, query)), 0.025, 5) == best and 7 in best  # 2.5 % of 400
    assert index.nearest(list(map(float, query)), 0.025, 20) == set(map(int, np.argsort(-cosines)[:20]))
    flat = SemanticIndex()
    flat.add_many(list(range(30)), [[1.0, 0.0]] * 30)
    assert flat.nearest([0.0, 1.0], 0.025, 10) == set(range(30))
    assert SemanticIndex().nearest([1.0, 0.0], 0.025, 10) == set()


def test_ranked_without_standing_out_all_come_nearest_first_and_said_then_spreads_them():
    """`rank(..., stand_out=None)`: every passage not skipped, nearest first, however alike
    (what recall ranks within a span a question names); select.said_then scores them from 1
    (the nearest) to 0 (the farthest), one alone at 1."""
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 16))
    index = SemanticIndex()
    index.add_many(list(range(40)), [list(map(float, v)) for v in vectors])
    query = list(map(float, vectors[4]))
    cosines = vectors @ vectors[4] / np.linalg.norm(vectors, axis=1) / np.linalg.norm(vectors[4])
    odd = lambda pid: pid % 2 == 1
    ranked = index.rank(query, odd, 100, None)
    evens = [int(p) for p in np.argsort(-cosines) if p % 2 == 0 and cosines[p] > 0]
    assert [p for p, _ in ranked] == evens and len(index.rank(query, odd, 100)) < len(evens)
    scores = select.said_then(ranked)
    assert scores[0] == (4, 1.0) and scores[-1][1] == 0.0
    assert [s for _, s in scores] == sorted((s for _, s in scores), reverse=True)
    assert select.said_then(ranked[:1]) == [(4, 1.0)] and select.said_then([]) == []


def test_a_query_is_embedded_once_however_often_and_again_after_a_failure():
    """query_vectors.py: a turn asks for its question's vector several times (recall asked
    again smaller, after older turns moved out): the encoder is asked once; concurrent asks
    share the call; a failed call is asked again; the oldest queries are let go."""
    import asyncio

    from ctxkeep.daemon.retrieval import query_vectors
    from ctxkeep.daemon.retrieval.query_vectors import QueryVectors

    class Encoder:
        name = "enc"

        def __init__(self) -> None:
            self.asked: list[str] = []
            self.fail = False

        async def queries(self, texts: list[str]) -> list[list[float]]:
            self.asked += texts
            await asyncio.sleep(0.01)
            if self.fail:
                raise RuntimeError("down")
            return [[float(len(t))] for t in texts]

    async def run() -> None:
        encoder, vectors = Encoder(), QueryVectors()
        both = await asyncio.gather(vectors.call(encoder, "abc"), vectors.call(encoder, "abc"))
        assert both == [[3.0], [3.0]] and await vectors.call(encoder, "abc") == [3.0]
        assert encoder.asked == ["abc"]
        encoder.fail = True
        try:
            await vectors.call(encoder, "de")
        except RuntimeError:
            pass
        encoder.fail = False
        assert await vectors.call(encoder, "de") == [2.0] and encoder.asked == ["abc", "de", "de"]
        for n in range(query_vectors.KEPT):
            await vectors.call(encoder, f"q{n}")
        await vectors.call(encoder, "abc")  # let go: asked again
        assert encoder.asked.count("abc") == 2
    asyncio.run(run())
