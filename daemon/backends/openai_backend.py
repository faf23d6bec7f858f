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
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import msgspec

from ctxkeep.daemon.backends.facts import ModelFacts, same_model
from ctxkeep.daemon.backends.one_server import OneServer
from ctxkeep.daemon.backends.openai_client import make_client, server_root
from ctxkeep.daemon.backends.openai_count import PromptCounter
from ctxkeep.daemon.backends.openai_errors import classify
from ctxkeep.daemon.backends.openai_facts import model_facts
from ctxkeep.daemon.backends.openai_shapes import StreamReader, answer_chunk, request_messages, request_params
from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras, ModelCallError
from ctxkeep.daemon.backends.sent import calling
from ctxkeep.daemon.backends.server_cache import ServerCache
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.structs import ModelInfo, OllamaStatus

log = logging.getLogger(__name__)
#: The system message of the probe of what a chat template does with one.
SYSTEM_PROBE = "You are a helpful assistant. Answer in English, briefly and exactly."


def alias(model_id: str) -> str:
    """A model as users name it: llama.cpp's server lists a model by the path of its file
    unless started with --alias ("/models/gemma-3-270m-Q4_K_M.gguf" -> "gemma-3-270m-Q4_K_M")."""
    if "/" in model_id or model_id.endswith(".gguf"):
        name = model_id.rstrip("/").rsplit("/", 1)[-1]
        return name[:-5] if name.endswith(".gguf") else name
    return model_id


class OpenAIBackend(OneServer):
    """The daemon's connection to one OpenAI-compatible server."""

    kind = "openai"

    def __init__(self, name: str, url: str, connect_timeout: float, read_timeout: float, key: str = "",
                 context_length: int = 0, changed: asyncio.Event | None = None) -> None:
        super().__init__(name, url, lambda: make_client(url, key, connect_timeout, read_timeout), changed)
        self._read_timeout = read_timeout
        self._context_length = context_length
        self._entries: dict[str, dict[str, Any]] = {}
        #: The name users see (llama.cpp lists a model by its file path) -> the server's id.
        self._ids: dict[str, str] = {}
        #: Models whose chat template drops system messages (their content then opens the
        #: first user message instead).
        self._drops_system: dict[str, bool] = {}
        self.where = f"{name!r} at {url}"
        self._counter = PromptCounter(server_root(url), self.where)
        #: What its prompt cache probably holds, where it does not say.
        self._cache = ServerCache()

    def _id(self, model: str) -> str:
        """The server's id of a model users name by its alias."""
        return self._ids.get(model, model)

    def takes_side_requests(self) -> bool:
        """Whether a request may go to the server while it streams an answer: only where it
        says it has several slots (llama.cpp's single slot cuts the stream for another)."""
        return any(f.slots > 1 for f in self._facts.values())

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
        except Exception as exc:  # every failure becomes a ModelCallError
            raise self.explain(exc) from None
        self.reached()
        items = [m.model_dump() for m in page.data]
        self._ids = {alias(str(m["id"])): str(m["id"]) for m in items}
        self._entries = {alias(str(m["id"])): m for m in items}
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
            found = ModelFacts(context_length=self._context_length, capabilities=found.capabilities,
                               slots=found.slots)
        elif not found.context_length:
            log.warning("%s does not say the window of %s: set context_length in its [[backends]] "
                        "table of config.toml (num_ctx is used meanwhile)", self.where, model)
        self._facts[model] = found
        self._drops_system[model] = await self._drops_system_message(model)
        return found

    async def _drops_system_message(self, model: str) -> bool:
        """Whether the server's chat template drops a system message (llama-cpp-python's
        `gemma` format does): the same question asked with and without one, one token of
        answer each, counts the same prompt tokens."""
        client = await self.client()
        question = [{"role": "user", "content": "Hi"}]
        try:
            counts = []
            for messages in ([{"role": "system", "content": SYSTEM_PROBE}, *question], question):
                answer = await client.chat.completions.create(model=self._id(model), messages=messages,
                                                              stream=False, max_tokens=1)
                counts.append(int(answer.usage.prompt_tokens) if answer.usage else -1)
        except Exception as exc:  # not known: system messages are sent as they are
            log.info("%s: could not check what %s's template does with a system message: %s",
                     self.where, model, self.explain(exc, model).message)
            return False
        if counts[0] >= 0 and counts[0] == counts[1]:
            log.warning("%s: the chat template of %s drops system messages: ctxkeepd puts the system "
                        "prompt, goals and checkpoints at the start of the first user message instead",
                        self.where, model)
            return True
        return False

    async def installed(self, details: bool = True) -> list[ModelInfo]:
        """The models of /v1/models; with `details`, each with its window."""
        out = []
        for item in await self._list():
            name = alias(str(item["id"]))
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
        # a server that does not list it is not loading it (it loads nothing on demand):
        # unknown, so that a silent server is given up after first_token_timeout
        return True if any(same_model(name, model) for name in self.listed) else None

    async def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]:
        raise ModelCallError(ErrorCode.INVALID_ARGUMENT,
                             f"{self.where} is an OpenAI-compatible server: it cannot download models. "
                             f"Load {model!r} in the server itself, or pull it into an Ollama backend")
        yield "", 0, 0  # an async generator, as the Protocol has it

    async def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                          options: Mapping[str, Any], extras: ChatExtras,
                          on_sent: Callable[[], object] | None = None) -> AsyncGenerator[ChatChunk, None]:
        """Stream a chat; raises ModelCallError on any failure, including a cut stream."""
        sent = request_messages(messages, self._drops_system.get(model, False))
        params = request_params(options, extras, continues=bool(sent) and sent[-1].get("role") == "assistant")
        first = None  # the prompt counted before its answer: (count, nanoseconds, share cached)
        if self._cache.streams_bare:  # so that the answer stays in the server's cache for the next turn
            share = self._cache.reading(sent)
            first = (*await self._ask_count(model, sent, params), share)
        reader, written = StreamReader(self.name), []
        share = self._cache.reading(sent)
        try:
            stream = await calling((await self.client()).chat.completions.create(
                model=self._id(model), messages=sent, stream=True, stream_options={"include_usage": True}, **params),
                on_sent)
            async for event in stream:
                self.reached()
                chunk = reader.read(event)
                if chunk is not None:
                    written.append(chunk.content)
                    yield chunk
        except Exception as exc:
            raise self.explain(exc, model) from None
        if not reader.finish:
            raise ModelCallError(ErrorCode.STREAM_INTERRUPTED,
                                 f"{self.where} ended the answer before saying why it ended: send again")
        final = reader.final()
        self._cache.wrote(sent, "".join(written))
        if final.prompt_eval_count is None:
            self._cache.streams_bare = True
            if first is not None and first[0] is not None:  # it read the prompt then, not now
                count, reading, share = first
                final = msgspec.structs.replace(final, prompt_eval_count=count, prompt_eval_duration=reading)
            else:  # the count after the answer: the server's cache ends with the prompt again
                final = msgspec.structs.replace(final, prompt_eval_count=(await self._ask_count(model, sent, params))[0])
                self._cache.reading(sent)
        yield self._cache.estimated(final, share)

    async def _ask_count(self, model: str, sent: list[dict[str, Any]],
                         params: dict[str, Any]) -> tuple[int | None, int]:
        """The server's count of the prompt, asked whole (one token of answer), and the
        nanoseconds it took: reading what its cache did not hold. None when it failed."""
        started = time.monotonic_ns()
        try:
            whole = await (await self.client()).chat.completions.create(
                model=self._id(model), messages=sent, stream=False, **{**params, "max_tokens": 1})
        except Exception as exc:  # the answer stands; only its count is unknown
            log.warning("%s did not count the prompt: %s", self.where, self.explain(exc, model).message)
            return None, 0
        usage = whole.usage
        return (int(usage.prompt_tokens) if usage else None), time.monotonic_ns() - started

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> ChatChunk:
        """One whole answer (summaries)."""
        started = time.monotonic_ns()
        sent = request_messages(messages, self._drops_system.get(model, False))
        share = self._cache.reading(sent)
        try:
            response = await (await self.client()).chat.completions.create(
                model=self._id(model), messages=sent, stream=False, **request_params(options, ChatExtras()))
        except Exception as exc:
            raise self.explain(exc, model) from None
        self.reached()
        whole = answer_chunk(response, self.name, started)
        self._cache.wrote(sent, whole.content)
        return self._cache.estimated(whole, share)

    async def count_prompt(self, model: str, messages: Sequence[Mapping[str, Any]],
                           tools: list[dict[str, Any]] | None = None,
                           options: Mapping[str, Any] | None = None) -> int | None:
        """The prompt's tokens by the server's tokenizer and template (openai_count.py)."""
        sent = request_messages(messages, self._drops_system.get(model, False))
        found = await self._counter.count(await self.client(), self._id(model), sent, tools)
        if self._counter.way == "reading":  # the server read it to count it
            self._cache.reading(sent)
        if found is not None:
            self.reached()
        return found

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embeddings from /v1/embeddings (one call for all texts)."""
        try:
            response = await (await self.client()).embeddings.create(model=self._id(model), input=texts)
        except Exception as exc:
            raise self.explain(exc, model) from None
        self.reached()
        vectors = [list(d.embedding) for d in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts):
            raise ModelCallError(ErrorCode.MODEL_SERVER_ERROR, f"{self.where} returned the wrong number of embeddings")
        return vectors
