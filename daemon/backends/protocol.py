"""What the daemon needs of a model backend: the seam between the engine and the model
servers.

`OllamaBackend` (backend.py, Ollama's API) and `OpenAIBackend` (openai_backend.py, any
OpenAI-compatible server) speak to one server each; `Hosts` (hosts.py) puts several
behind one backend. The engine (generation, compaction, relevance, summaries) and the
handlers are typed against this Protocol and read answers as `ChatChunk`s, so another
backend, or a test double, needs only these members.
"""

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import msgspec

from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol.structs import BackendStatus, ModelInfo, OllamaStatus
from ctxkeep.protocol.tools import ToolCall


class ModelCallError(RequestError):
    """A failed model call: an error code and a message that says what to do."""


class ChatChunk(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of a streamed answer, whatever server sent it; the last has `done` and the
    counts (Ollama's names; an OpenAI server's `usage` and finish reason)."""

    content: str = ""
    thinking: str = ""
    #: Calls the answer makes, each whole (an OpenAI server's deltas already joined).
    tool_calls: tuple[ToolCall, ...] = ()
    done: bool = False
    #: "stop", "length" (the answer reached its limit), "tool_calls", ...
    done_reason: str = ""
    #: The exact tokens of the prompt (None: the server did not say).
    prompt_eval_count: int | None = None
    #: Of those, the ones the server took from its prompt cache rather than read (None:
    #: it did not say): Ollama's prompt_eval_cached_count, llama.cpp's timings.cache_n,
    #: OpenAI's usage.prompt_tokens_details.cached_tokens.
    prompt_eval_cached_count: int | None = None
    #: Where the server does not say what its cache served: the backend's estimate, from the
    #: prefix this prompt shares with the last one it sent that server (which keeps the last
    #: prompt it read). It teaches reading speeds (context/speeds.py); it is never shown.
    cached_estimate: int | None = None
    eval_count: int = 0
    #: Nanoseconds, as Ollama reports them (measured by the daemon for other servers).
    total_duration: int = 0
    load_duration: int = 0
    prompt_eval_duration: int = 0
    eval_duration: int = 0
    #: The backend (its name in config.toml) that answered.
    host: str = ""


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

    #: Set when a call finds the server's reachability otherwise than `status` said.
    changed: asyncio.Event

    @property
    def host(self) -> str:
        """Where the server listens (of several: the first)."""

    @property
    def status(self) -> OllamaStatus:
        """The servers' reachability as one (reachable when any is)."""

    @property
    def listed(self) -> list[str] | None:
        """The models the server listed last (None: never listed)."""

    def preload(self) -> None: ...

    def hosts(self) -> list[BackendStatus]:
        """Each server's state, in config order."""

    def ollama_url(self) -> str | None:
        """The URL of the (first) Ollama server, for what only Ollama's API does."""

    async def close(self) -> None: ...

    async def check(self, down_too: bool = False) -> OllamaStatus: ...

    def known_facts(self, model: str) -> ModelFacts | None: ...

    async def facts(self, model: str) -> ModelFacts: ...

    async def installed(self, details: bool = True) -> list[ModelInfo]: ...

    async def loaded(self, model: str) -> bool | None: ...

    def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]: ...

    def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                    options: Mapping[str, Any], extras: ChatExtras,
                    on_sent: Callable[[], object] | None = None) -> AsyncGenerator[ChatChunk, None]:
        """The answer's chunks; `on_sent` is called once the request is out."""

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> ChatChunk:
        """One answer whole (summaries): one chunk with `done`."""

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]: ...

    async def count_prompt(self, model: str, messages: Sequence[Mapping[str, Any]],
                           tools: list[dict[str, Any]] | None = None,
                           options: Mapping[str, Any] | None = None) -> int | None:
        """The prompt's tokens as the server will count them, asked before it is sent (its
        own tokenizer and template; `options` as the chat will send them), or None where
        the server cannot say."""
