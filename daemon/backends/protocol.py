"""What the daemon needs of a model backend: the seam between the engine and Ollama.

`OllamaBackend` (backend.py) is the one implementation; the engine (generation,
compaction, relevance, summaries) and the handlers are typed against this
Protocol, so another backend, or a test double, needs only these members.
"""

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import msgspec

from ctxkeep.protocol.structs import OllamaStatus
from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.protocol.structs import ModelInfo


class ChatExtras(msgspec.Struct, frozen=True):
    """What a turn asks of its one model call besides the prompt and the session's options,
    passed to Ollama's /api/chat as its fields of the same names."""

    #: Ask a thinking model to think, or how hard ("low", "medium", "high"; None: the
    #: model's default).
    think: bool | Literal["low", "medium", "high"] | None = None
    #: "json", or a JSON schema the answer must follow (None: free text).
    format: str | dict[str, Any] | None = None
    #: How long the model stays loaded after the call ("5m", seconds; None: Ollama's default).
    keep_alive: str | float | None = None
    #: The tools the model may call (Ollama's `tools`; None: none).
    tools: list[dict[str, Any]] | None = None

    def fields(self) -> dict[str, Any]:
        """The fields that are set, as keyword arguments of the client's `chat`."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class ModelBackend(Protocol):
    """Model calls, their failures raised as `ModelCallError` (a coded error)."""

    host: str
    status: OllamaStatus
    #: Set when a call finds the server's reachability otherwise than `status` said.
    changed: asyncio.Event
    #: The models the server listed last (None: never listed).
    listed: list[str] | None

    def preload(self) -> None: ...

    async def close(self) -> None: ...

    async def check(self) -> OllamaStatus: ...

    def known_facts(self, model: str) -> ModelFacts | None: ...

    async def facts(self, model: str) -> ModelFacts: ...

    async def installed(self, details: bool = True) -> list[ModelInfo]: ...

    async def loaded(self, model: str) -> bool | None: ...

    def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]: ...

    def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                    options: Mapping[str, Any], extras: ChatExtras,
                    on_sent: Callable[[], object] | None = None) -> AsyncIterator[Any]:
        """The answer's chunks; `on_sent` is called once the request is out."""

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> Any: ...

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]: ...
