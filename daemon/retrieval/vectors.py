"""A session's passages as unit vectors (one matrix that grows by doubling), and the
nearest of them to a message's vector: recall's and memory's meaning-based ranking. The
vectors come from semantic.py's embedder."""

import bisect
import math
from collections.abc import Callable

import numpy as np

#: Standard deviations above the mean cosine a passage must be to be ranked.
STAND_OUT = 3.0


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

    def vector(self, pid: int) -> list[float] | None:
        """Passage `pid`'s unit vector (None where it has none yet); ids grow as added."""
        row = bisect.bisect_left(self.ids, pid)
        if self._matrix is None or row == len(self.ids) or self.ids[row] != pid:
            return None
        return self._matrix[row].tolist()

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
             stand_out: float | None = STAND_OUT) -> list[tuple[int, float]]:
        """(passage id, cosine) of the `limit` nearest passages, nearest first, of those
        that stand out: `stand_out` deviations nearer than the passages are on average
        (embeddings find every text somewhat alike; a question about nothing said before
        recalls nothing; None: all, nearest first), leaving out the passage ids `skip` names."""
        if self._matrix is None or not self.ids:
            return []
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (self._matrix.shape[1],) or not np.linalg.norm(q):
            return []
        scores = self._matrix[:len(self.ids)] @ (q / np.linalg.norm(q))
        floor = -1.0 if stand_out is None else float(scores.mean() + stand_out * scores.std())
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
