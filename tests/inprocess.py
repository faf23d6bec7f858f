"""The daemon's services in-process: the real store (LMDB in a temporary folder), the
services wired by `services.build`, a model backend of the test's choosing, no sockets.
A request goes straight to its handler in `HANDLERS`; every published event is kept. The
built-in embedder reads the vectors it has computed before from tests/e5_memo.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ctxkeep.daemon import services as services_module
from ctxkeep.daemon.backends.protocol import ModelBackend
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.handlers import HANDLERS
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import Event
from ctxkeep.protocol.structs import DaemonStatus
from e5_memo import MemoEncoder


class RecordingBus(EventBus):
    """The engine's event bus with a listener that keeps what it publishes (no transport)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Event] = []
        self.listen(self.seen.append)


class InProcess:
    """One daemon's services over a store in `root`."""

    def __init__(self, root: Path, backend: ModelBackend, config: Config | None = None) -> None:
        self.store = Store.open(root)
        self.bus = RecordingBus()
        self.backend = backend
        config = config or Config(embed_builtin=False)  # the built-in embedder where a test asks for it
        self.services = services_module.build(config, self.store, self.bus, backend,
                                              lambda: DaemonStatus(), lambda: False,
                                              root / "config.toml")
        if config.embed_builtin:  # the package's vectors, from the memo where it has them
            self.services.recaller.embedder._builtin = MemoEncoder()

    async def call(self, request: requests.Request):
        return await HANDLERS[type(request)](self.services, request)

    async def embedded(self, tries: int = 100) -> None:
        """Until the passages' vectors, computed in the background, are all there (or
        `tries` times 50 ms)."""
        for _ in range(tries):
            if not self.services.recaller.embedder.behind():
                break
            await asyncio.sleep(0.05)

    def of_type(self, kind) -> list:
        return [e for e in self.bus.seen if isinstance(e, kind)]

    def close(self) -> None:
        self.services.files.close()
        self.store.close()
