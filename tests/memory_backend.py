"""An in-memory model backend: the `ModelBackend` Protocol with no HTTP, for engine and
handler tests that run in-process.

It behaves as the stand-in does where the engine can tell: token counts from the
stand-in's tokenizer over its chat template, a prompt over `num_ctx` refused (as Ollama
0.12+ does with `truncate: false`), replies streamed word by word as the official
`ChatChunk`s, summaries answered by `chat_once`, embeddings for
the embedding model only. Faults on demand: `fail_at(chunk, error)` raises `error` after
that many streamed chunks of the next chat; `hold()` parks the next chat before its first
chunk until `release()` (to cancel a turn mid-call).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.daemon.backends.protocol import ChatChunk, ModelCallError
from ctxkeep.daemon.retrieval.encoders import prefixes
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.structs import BackendStatus, ModelInfo, OllamaStatus
from ollama_standin import DEFAULT_MODELS, Model, count_tokens, embed_vector, images_of, render, split_stream


class MemoryBackend:
    """Model calls answered in memory; `chats` records every prompt it was given."""

    def __init__(self, reply: Callable[[list[dict[str, Any]]], str] | None = None,
                 count: Callable[[str], int] = count_tokens) -> None:
        self.host = "memory://"
        self.status = OllamaStatus(host=self.host, reachable=True, version="memory")
        self.changed = asyncio.Event()
        self.listed: list[str] | None = None
        self.models = {m.name: m for m in DEFAULT_MODELS}
        self.reply = reply or (lambda messages: f"You said: {messages[-1]['content'][:60]}")
        #: Every text it was asked to embed, in order (with the task prefix the daemon gave it).
        self.embedded: list[str] = []
        #: Seconds the embedding of a new message (a query) takes: an embedding model busy
        #: with others' work.
        self.query_delay = 0.0
        self.chats: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
        #: The tokenizer (the stand-in's `count_tokens`, or `count_tokens_bpe`).
        self.count = count
        #: Whether `count` says a prompt's tokens before it is sent (as llama.cpp's server
        #: can; Ollama cannot), and the prompts it was asked.
        self.counts = False
        #: Nanoseconds the answers' timings say a prompt token and an answer token took.
        self.ns_per_read = 1
        self.ns_per_write = 1
        self.counted: list[list[dict[str, Any]]] = []
        self._faults: deque[tuple[int, BaseException]] = deque()
        self._gate: asyncio.Event | None = None
        self._parked_at: list[asyncio.Event] = []
        self.parked = asyncio.Event()

    # -- test controls ---------------------------------------------------------------

    def fail_at(self, chunk: int, error: BaseException) -> None:
        """The next chat raises `error` after `chunk` streamed chunks."""
        self._faults.append((chunk, error))

    def hold(self) -> None:
        """The next chat waits before its first chunk until `release()`; `parked` is set
        once it waits."""
        self._gate = asyncio.Event()
        self.parked = asyncio.Event()

    def release(self) -> None:
        """Let every held chat go on (parked or not yet)."""
        for gate in [self._gate, *self._parked_at]:
            if gate is not None:
                gate.set()
        self._gate, self._parked_at = None, []

    # -- the Protocol ----------------------------------------------------------------

    def preload(self) -> None:
        return None

    def hosts(self) -> list[BackendStatus]:
        return [BackendStatus(name="memory", host=self.host, reachable=True, version="memory")]

    def ollama_url(self) -> str | None:
        return None

    async def close(self) -> None:
        return None

    async def check(self, down_too: bool = False) -> OllamaStatus:
        return self.status

    def known_facts(self, model: str) -> ModelFacts | None:
        known = self.models.get(model)
        return None if known is None else ModelFacts(
            context_length=known.context_length, parameter_size=known.parameter_size,
            capabilities=(("thinking",) if known.thinking else ("completion",))
            + (("vision",) if known.image_tokens else ()))

    async def facts(self, model: str) -> ModelFacts:
        known = self.known_facts(model)
        if known is None:
            raise ModelCallError(ErrorCode.MODEL_NOT_FOUND, f"model {model!r} is not available")
        return known

    async def installed(self, details: bool = True) -> list[ModelInfo]:
        return [ModelInfo(name=m.name, size=4_700_000_000, parameter_size=m.parameter_size,
                          family=m.family, context_length=m.context_length)
                for m in self.models.values()]

    async def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]:
        yield "pulling manifest", 0, 0
        if model.startswith("nosuch"):
            raise ModelCallError(ErrorCode.MODEL_NOT_FOUND, f"Ollama could not pull {model!r}")
        for done in (0, 2, 4):
            await asyncio.sleep(0)
            yield "pulling layer", done, 4
        self.models[model] = Model(model)
        yield "success", 0, 0

    def _tokens(self, model: str, sent: list[dict[str, Any]]) -> int:
        """A prompt's tokens: its rendered text's, and a fixed cost per image."""
        known = self.models.get(model)
        return self.count(render(sent)) + (known.image_tokens if known else 0) * images_of(sent)

    def _prompt(self, model: str, messages: Sequence[Mapping[str, Any]],
                options: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
        sent = [dict(m) for m in messages]
        self.chats.append((sent, dict(options)))
        tokens = self._tokens(model, sent)
        if tokens > int(options.get("num_ctx", 4096)):
            raise ModelCallError(ErrorCode.CONTEXT_OVERFLOW,
                                 f"Ollama refused a prompt larger than the window ({tokens} tokens): "
                                 "compact the session or raise num_ctx")  # as the real backend says it
        return sent, tokens

    async def _wait_if_held(self) -> None:
        if self._gate is not None:
            gate, self._gate = self._gate, None
            self._parked_at.append(gate)
            self.parked.set()
            await gate.wait()

    async def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                          options: Mapping[str, Any], extras: Any,
                          on_sent: Callable[[], object] | None = None) -> AsyncIterator[Any]:
        await self.facts(model)
        sent, tokens = self._prompt(model, messages, options)
        if on_sent is not None:  # the request is out, as the daemon's transport reports it
            on_sent()
        await self._wait_if_held()
        fail_at, error = self._faults.popleft() if self._faults else (-1, None)
        text, cut = self._limited(self.reply(sent), options)
        for index, piece in enumerate(split_stream(text)):
            if index == fail_at:
                raise error  # type: ignore[misc]
            await asyncio.sleep(0)
            yield ChatChunk(content=piece)
        if fail_at >= 0 and error is not None:
            raise error
        yield ChatChunk(done=True, done_reason="length" if cut else "stop", prompt_eval_count=tokens,
                        eval_count=self.count(text), total_duration=1, prompt_eval_duration=tokens * self.ns_per_read,
                        eval_duration=self.count(text) * self.ns_per_write, host="memory")

    def _limited(self, text: str, options: Mapping[str, Any]) -> tuple[str, bool]:
        """The answer as far as `num_predict` lets it go (generation stops there, as
        Ollama's does), and whether it was cut."""
        limit = int(options.get("num_predict") or 0)
        if not (limit > 0 and self.count(text) > limit):
            return text, False
        words = text.split(" ")
        fits, over = 0, len(words)  # the most words that fit: a prefix's count grows with it
        while over - fits > 1:
            middle = (fits + over) // 2
            fits, over = (middle, over) if self.count(" ".join(words[:middle])) <= limit else (fits, middle)
        return " ".join(words[:fits]), True

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> ChatChunk:
        await self.facts(model)
        sent, tokens = self._prompt(model, messages, options)
        await self._wait_if_held()
        text, cut = self._limited(self.reply(sent), options)
        return ChatChunk(content=text, done=True, done_reason="length" if cut else "stop", prompt_eval_count=tokens, eval_count=self.count(text),
                         prompt_eval_duration=tokens * self.ns_per_read,
                         eval_duration=self.count(text) * self.ns_per_write, host="memory")

    async def loaded(self, model: str) -> bool | None:
        return model in self.models

    async def count_prompt(self, model: str, messages: list[dict[str, Any]],
                           tools: list[dict[str, Any]] | None = None,
                           options: dict[str, Any] | None = None) -> int | None:
        if not self.counts:
            return None
        sent = [dict(m) for m in messages]
        self.counted.append(sent)
        return self._tokens(model, sent)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        known = self.models.get(model)
        if known is None or not known.embedding:
            raise ModelCallError(ErrorCode.MODEL_NOT_FOUND, f"model {model!r} is not available")
        self.embedded += texts
        asking = prefixes(model)[0]  # (a model without task prefixes: its queries cannot be told apart)
        if self.query_delay and asking and any(t.startswith(asking) for t in texts):
            await asyncio.sleep(self.query_delay)
        return [embed_vector(t) for t in texts]
