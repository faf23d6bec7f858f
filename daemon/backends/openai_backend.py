"""Model calls to an OpenAI-compatible server (llama.cpp's, vLLM, LM Studio, SGLang, ...)
through the official `openai` client: streaming chat with `stream_options.include_usage`
(the exact count is `usage.prompt_tokens`), `max_tokens` set to the room the window leaves
(the engine's `num_predict`), an over-length refusal as `context_overflow`, embeddings from
/v1/embeddings, models from /v1/models, the window from what the server says of it
(openai_facts.py) or from config.

A server that leaves `usage` out of a stream (llama-cpp-python's) is asked the prompt's
count once more, whole and with one token of answer (its prompt cache makes that cheap):
the count stays the server's own, never a guess.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import msgspec

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.structs import ModelInfo, OllamaStatus
from ctxkeep.daemon.backends.facts import ModelFacts, same_model
from ctxkeep.daemon.backends.one_server import OneServer
from ctxkeep.daemon.backends.openai_client import make_client
from ctxkeep.daemon.backends.openai_errors import classify
from ctxkeep.daemon.backends.openai_facts import model_facts
from ctxkeep.daemon.backends.openai_shapes import StreamReader, answer_chunk, request_messages, request_params
from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras, ModelCallError
from ctxkeep.daemon.backends.sent import calling

log = logging.getLogger(__name__)


class OpenAIBackend(OneServer):
    """The daemon's connection to one OpenAI-compatible server."""

    kind = "openai"

    def __init__(self, name: str, url: str, connect_timeout: float, read_timeout: float, key: str = "",
                 context_length: int = 0, changed: asyncio.Event | None = None) -> None:
        super().__init__(name, url, lambda: make_client(url, key, connect_timeout, read_timeout), changed)
        self._read_timeout = read_timeout
        self._context_length = context_length
        self._entries: dict[str, dict[str, Any]] = {}
        self.where = f"{name!r} at {url}"

    def ollama_url(self) -> str | None:
        return None

    def explain(self, exc: BaseException, model: str = "") -> ModelCallError:
        """A ModelCallError saying what went wrong and what to do next."""
        error, answered = classify(exc, self.where, model, self._read_timeout)
        if error.code == ErrorCode.OLLAMA_UNREACHABLE:
            self.unreachable()
        elif answered:
            self.reached()
        return error

    async def _list(self) -> list[dict[str, Any]]:
        """/v1/models, each item as the server sent it (vLLM's `max_model_len` included)."""
        try:
            page = await (await self.client()).models.list()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a ModelCallError
            raise self.explain(exc) from None
        self.reached()
        items = [m.model_dump() for m in page.data]
        self._entries = {str(m["id"]): m for m in items}
        self.listed = list(self._entries)
        return items

    async def check(self) -> OllamaStatus:
        """Ask /v1/models: whether the server answers (an OpenAI server has no version)."""
        try:
            await self._list()
            self.status = OllamaStatus(host=self.host, reachable=True)
        except ModelCallError as exc:
            self.status = OllamaStatus(host=self.host, reachable=False, error=exc.message)
        return self.status

    async def facts(self, model: str) -> ModelFacts:
        """The model's window: `context_length` from config, else what the server says."""
        if model in self._facts:
            return self._facts[model]
        if model not in self._entries:
            await self._list()
        entry = next((e for name, e in self._entries.items() if same_model(name, model)), None)
        if entry is None:
            raise ModelCallError(ErrorCode.MODEL_NOT_FOUND,
                                 f"model {model!r} is not served by {self.where} (it serves: "
                                 f"{', '.join(self._entries) or 'nothing'}): pick one of those")
        found = await model_facts(await self.client(), self.host, model, entry)
        if self._context_length:
            found = ModelFacts(context_length=self._context_length, capabilities=found.capabilities)
        elif not found.context_length:
            log.warning("%s does not say the window of %s: set context_length in its [[backends]] "
                        "table of config.toml (num_ctx is used meanwhile)", self.where, model)
        self._facts[model] = found
        return found

    async def installed(self, details: bool = True) -> list[ModelInfo]:
        """The models of /v1/models; with `details`, each with its window."""
        out = []
        for item in await self._list():
            name = str(item["id"])
            length = 0
            if details:
                try:
                    length = (await self.facts(name)).context_length
                except ModelCallError:
                    pass
            out.append(ModelInfo(name=name, context_length=length, loaded=True, family=str(item.get("owned_by") or "")))
        return out

    async def loaded(self, model: str) -> bool | None:
        """An OpenAI server serves what it lists: loaded (None before it listed anything).
        It is not asked again here: this is asked while a chat waits for its first token,
        and a request then would cut that chat short on llama-cpp-python's server (its
        `interrupt_requests`)."""
        if self.listed is None:
            return None
        return any(same_model(name, model) for name in self.listed)

    async def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]:
        raise ModelCallError(ErrorCode.INVALID_ARGUMENT,
                             f"{self.where} is an OpenAI-compatible server: it cannot download models. "
                             f"Load {model!r} in the server itself, or pull it into an Ollama backend")
        yield "", 0, 0  # an async generator, as the Protocol has it

    async def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                          options: Mapping[str, Any], extras: ChatExtras,
                          on_sent: Callable[[], object] | None = None) -> AsyncIterator[ChatChunk]:
        """Stream a chat; raises ModelCallError on any failure, including a cut stream."""
        sent = request_messages(messages)
        params = request_params(options, extras)
        reader = StreamReader(self.name)
        try:
            stream = await calling((await self.client()).chat.completions.create(
                model=model, messages=sent, stream=True, stream_options={"include_usage": True}, **params),
                on_sent)
            async for event in stream:
                self.reached()
                chunk = reader.read(event)
                if chunk is not None:
                    yield chunk
        except Exception as exc:  # noqa: BLE001
            raise self.explain(exc, model) from None
        if not reader.finish:
            raise ModelCallError(ErrorCode.STREAM_INTERRUPTED,
                                 f"{self.where} ended the answer before saying why it ended: send again")
        final = reader.final()
        if final.prompt_eval_count is None:
            final = await self._counted(final, model, sent, params)
        yield final

    async def _counted(self, final: ChatChunk, model: str, sent: list[dict[str, Any]],
                       params: dict[str, Any]) -> ChatChunk:
        """`final` with the server's count of the prompt, asked whole (one token of answer)."""
        try:
            whole = await (await self.client()).chat.completions.create(
                model=model, messages=sent, stream=False, **{**params, "max_tokens": 1})
        except Exception as exc:  # noqa: BLE001 - the answer stands; only its count is unknown
            log.warning("%s did not count the prompt: %s", self.where, self.explain(exc, model).message)
            return final
        usage = whole.usage
        return msgspec.structs.replace(final, prompt_eval_count=int(usage.prompt_tokens) if usage else None)

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> ChatChunk:
        """One whole answer (summaries)."""
        started = time.monotonic_ns()
        try:
            response = await (await self.client()).chat.completions.create(
                model=model, messages=request_messages(messages), stream=False,
                **request_params(options, ChatExtras()))
        except Exception as exc:  # noqa: BLE001
            raise self.explain(exc, model) from None
        self.reached()
        return answer_chunk(response, self.name, started)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embeddings from /v1/embeddings (one call for all texts)."""
        try:
            response = await (await self.client()).embeddings.create(model=model, input=texts)
        except Exception as exc:  # noqa: BLE001
            raise self.explain(exc, model) from None
        self.reached()
        vectors = [list(d.embedding) for d in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts):
            raise ModelCallError(ErrorCode.OLLAMA_ERROR, f"{self.where} returned the wrong number of embeddings")
        return vectors
