"""Recall's vectors (recall/semantic.py): a batch added at once is the same index as its
vectors added one by one (the embedder adds batches; the loop must not pay per row)."""

import numpy as np

from ctxkeep.daemon.recall.semantic import SemanticIndex


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
