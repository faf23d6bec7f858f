"""Caches kept beside the sessions: per-model calibrations and embeddings."""


from ctxkeep.daemon.store import codecs, keys
from ctxkeep.daemon.store.context_records import Calibration
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.txn import Txn


class Caches:
    """Per-model calibrations and the embedding cache."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.dbs = env.dbs

    def calibration(self, model: str) -> Calibration | None:
        raw = self.env.read(lambda txn: txn.get(keys.model_key(model), db=self.dbs["calibration"]))
        return codecs.calibration(raw) if raw else None

    def save_calibration(self, model: str, calibration: Calibration) -> None:
        self.env.write(lambda txn: txn.put(keys.model_key(model), codecs.encode(calibration),
                                           db=self.dbs["calibration"]))

    def embedding(self, model: str, digest: str) -> list[float] | None:
        return self.embeddings(model, [digest]).get(digest)

    def embeddings(self, model: str, digests: list[str]) -> dict[str, list[float]]:
        """The cached vectors of those texts that have one (one read transaction)."""
        def read(txn: Txn) -> dict[str, list[float]]:
            found = ((d, txn.get(keys.embedding_key(model, d), db=self.dbs["embeddings"])) for d in digests)
            return {d: codecs.vector(raw) for d, raw in found if raw}
        return self.env.read(read)

    def save_embeddings(self, model: str, vectors: dict[str, list[float]]) -> None:
        def save(txn: Txn) -> None:
            for digest, vector in vectors.items():
                txn.put(keys.embedding_key(model, digest), codecs.encode(vector), db=self.dbs["embeddings"])
        self.env.write(save)
