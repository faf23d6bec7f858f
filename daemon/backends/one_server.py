"""What both kinds of backend do alike for their one server: its client, imported and
made in a worker thread once the daemon serves (`preload`: the first requests are answered
meanwhile, model calls wait for it), and whether the server answered last."""

import asyncio
from collections.abc import Callable
from typing import Any

from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.protocol.structs import BackendStatus, OllamaStatus


class OneServer:
    """The server's name, kind and URL, its client, and whether it answered last."""

    kind = "ollama"

    def __init__(self, name: str, host: str, make_client: Callable[[], Any],
                 changed: asyncio.Event | None = None) -> None:
        self.name = name
        self.host = host
        self._make_client = make_client
        self._loading: "asyncio.Future[Any] | None" = None
        self._client: Any = None
        #: What the server said of each model it was asked about (cached per daemon run).
        self._facts: dict[str, ModelFacts] = {}
        self.status = OllamaStatus(host=host, reachable=False, checked=False)
        #: Set when a call finds the server reachable (or not) against what `status` said,
        #: or a model was pulled: the daemon's watch then asks its version and models, and
        #: tells clients at once. Several servers may share one.
        self.changed = changed or asyncio.Event()
        #: The models the server listed last (None: never listed).
        self.listed: list[str] | None = None

    def preload(self) -> None:
        """Start making the client in a worker thread (call from the event loop)."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(self._make_client))

    async def client(self) -> Any:
        """The client, once made."""
        if self._client is None:
            self.preload()
            assert self._loading is not None
            self._client = await asyncio.shield(self._loading)
        return self._client

    async def close(self) -> None:
        if self._loading is not None:
            await (await self.client()).close()

    def known_facts(self, model: str) -> ModelFacts | None:
        """What the server said of the model, if it was already asked (no call)."""
        return self._facts.get(model)

    def takes_side_requests(self) -> bool:
        """Whether another request may go to the server while it streams an answer (Ollama
        queues it; a server of one slot may cut the stream short for it)."""
        return True

    def reached(self) -> None:
        """A call got an answer (whatever it said): the server is reachable."""
        if not self.status.reachable:
            self.status = OllamaStatus(host=self.host, reachable=True, version=self.status.version)
            self.changed.set()

    def unreachable(self, error: str = "unreachable") -> None:
        """A call could not connect."""
        if self.status.reachable:
            self.changed.set()
        self.status = OllamaStatus(host=self.host, reachable=False, error=error)

    def hosts(self) -> list[BackendStatus]:
        s = self.status
        return [BackendStatus(name=self.name, kind=self.kind, host=s.host, reachable=s.reachable,
                              version=s.version, error=s.error, checked=s.checked)]
