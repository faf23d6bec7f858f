"""One model server among several (backends/hosts.py): what the router knows of it."""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ctxkeep.daemon.backends.facts import same_model
from ctxkeep.protocol.structs import BackendStatus


@dataclass
class Host:
    """One server and what the router knows of it."""

    backend: Any  # OllamaBackend | OpenAIBackend: a ModelBackend with `name` and `kind`
    #: The models config.toml gives it (empty: whatever it lists).
    models: tuple[str, ...] = ()
    #: Requests in flight, and of those the answers (chats): what a turn is routed by
    #: (an embedding request is short; it does not send a turn elsewhere).
    busy: int = 0
    answering: int = 0
    failures: int = 0
    retry_at: float = 0.0
    #: Side requests in flight (embeddings, counts, facts), and whether there are none.
    sides: int = 0
    no_sides: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.no_sides.set()

    def side_started(self) -> None:
        self.sides += 1
        self.no_sides.clear()

    def side_ended(self) -> None:
        self.sides -= 1
        if not self.sides:
            self.no_sides.set()

    async def free_for_an_answer(self) -> None:
        """Wait, on a server of one slot, for the side requests already under way there: one
        that reached it after an answer began would cut that answer short."""
        if not self.backend.takes_side_requests():
            await self.no_sides.wait()

    def serves(self, model: str) -> bool | None:
        """Whether it serves `model` (None: not known yet)."""
        names = self.models or self.backend.listed
        return None if names is None else any(same_model(n, model) or n == model for n in names)

    def due(self, now: float) -> bool:
        """Up, or down long enough to be asked again."""
        return not self.failures or self.retry_at <= now

    def status(self) -> BackendStatus:
        s = self.backend.hosts()[0]
        retry = max(0.0, self.retry_at - time.monotonic()) if self.failures else 0.0
        return BackendStatus(name=s.name, kind=s.kind, host=s.host, reachable=s.reachable and not self.failures,
                             version=s.version, error=s.error, checked=s.checked, busy=self.busy,
                             retry_in=round(retry, 1))
