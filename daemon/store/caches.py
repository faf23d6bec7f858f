"""Caches kept beside the sessions: per-model calibrations and embeddings."""

import lmdb

from ctxkeep.daemon.store import codecs, keys
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.context_records import Calibration


class Caches:
    """Per-model calibrations and the embedding cache."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.dbs = env.dbs

    def calibration(self, model: str) -> Calibration | None:
        raw = self.env.read(lambda txn: txn.get(model.encode(), db=self.dbs["calibration"]))
        return codecs.calibration(raw) if raw else None

    def save_calibration(self, model: str, calibration: Calibration) -> None:
        self.env.write(lambda txn: txn.put(model.encode(), codecs.encode(calibration),
                                           db=self.dbs["calibration"]))

    def embedding(self, model: str, digest: str) -> list[float] | None:
        raw = self.env.read(lambda txn: txn.get(keys.embedding_key(model, digest), db=self.dbs["embeddings"]))
        return codecs.vector(raw) if raw else None

    def save_embeddings(self, model: str, vectors: dict[str, list[float]]) -> None:
        def save(txn: lmdb.Transaction) -> None:
            for digest, vector in vectors.items():
                txn.put(keys.embedding_key(model, digest), codecs.encode(vector), db=self.dbs["embeddings"])
        self.env.write(save)
