"""Caches kept beside the sessions: calibrations and embeddings."""

import lmdb

from ctxkeep.daemon.store.records import Calibration
from ctxkeep.daemon.store.environment import Environment


class Caches(Environment):
    """Per-model calibrations and the embedding cache."""

    def calibration(self, model: str) -> Calibration | None:
        raw = self.read(lambda txn: txn.get(model.encode(), db=self.dbs["calibration"]))
        return self._calibration_dec.decode(raw) if raw else None

    def save_calibration(self, model: str, calibration: Calibration) -> None:
        self.write(lambda txn: txn.put(model.encode(), self._enc.encode(calibration),
                                       db=self.dbs["calibration"]))

    def embedding(self, model: str, digest: str) -> list[float] | None:
        raw = self.read(lambda txn: txn.get(f"{model}/{digest}".encode(), db=self.dbs["embeddings"]))
        return self._vector_dec.decode(raw) if raw else None

    def save_embeddings(self, model: str, vectors: dict[str, list[float]]) -> None:
        def save(txn: lmdb.Transaction) -> None:
            for digest, vector in vectors.items():
                txn.put(f"{model}/{digest}".encode(), self._enc.encode(vector), db=self.dbs["embeddings"])
        self.write(save)
