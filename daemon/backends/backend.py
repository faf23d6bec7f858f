"""Model calls through the official `ollama` client, and their failures as error codes.

One `AsyncClient` (one connection pool) for the daemon's lifetime, with an
explicit connect timeout (the client's default is none). The `ollama` package
(and pydantic under it) takes about a third of a second to import, so it is
imported in a worker thread once the daemon serves (`preload`): the first
requests are answered meanwhile, and model calls wait for it.

The package is used through its public API only (`AsyncClient.chat`, `show`,
`embed`). Two needs it cannot express, met through httpx's public API instead:

- `truncate: false` on /api/chat (Ollama 0.12+ then refuses an overflowing prompt
  instead of dropping its oldest messages; older servers ignore the field). `chat()`
  has no parameter for it, so the client is given an httpx transport
  (`RefuseOverflow`, the extension point `AsyncClient(**kwargs)` passes on to httpx)
  that adds the field to each /api/chat body.
- /api/version, which the package has no call for: asked with httpx directly.
"""

import asyncio
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.daemon.backends.ollama_calls import chunk_of, classify
from ctxkeep.daemon.backends.one_server import OneServer
from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras, ModelCallError
from ctxkeep.daemon.backends.sent import sending
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.structs import ModelInfo, OllamaStatus

#: The first Ollama that reads `truncate` on /api/chat (older ones cut an overflowing prompt).
REFUSES_OVERFLOW_FROM = (0, 12)

#: Seconds /api/ps may take when asked while a chat waits for its first token.
PS_TIMEOUT_S = 3.0


def refuses_overflow(version: str) -> bool:
    """Whether an Ollama of `version` refuses a prompt over the window rather than cutting
    it (an unknown or unusual version, as from a build of its own, is taken to)."""
    found = re.match(r"v?(\d+)\.(\d+)", version or "")
    return found is None or (int(found[1]), int(found[2])) >= REFUSES_OVERFLOW_FROM


def _make_client(host: str, connect_timeout: float, read_timeout: float) -> Any:
    """The official client, its chat requests refusing overflow (imports ollama).

    httpx would route a proxied host (HTTP_PROXY and the like) through a transport of
    its own, past `RefuseOverflow`; so the proxy the environment names for this host is
    given to the inner transport instead, and httpx's own reading of the environment is
    off (`trust_env=False`)."""
    import httpx
    import ollama

    from ctxkeep.daemon.backends.refuse_overflow import RefuseOverflow
    from ctxkeep.daemon.backends.transport import transport_for
    return ollama.AsyncClient(host=host, timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
                              transport=RefuseOverflow(transport_for(host)), trust_env=False)


class OllamaBackend(OneServer):
    """The daemon's connection to one Ollama server."""

    def __init__(self, host: str, connect_timeout: float, read_timeout: float, name: str = "ollama",
                 changed: asyncio.Event | None = None) -> None:
        super().__init__(name, host, lambda: _make_client(host, connect_timeout, read_timeout), changed)
        self._timeouts = (connect_timeout, read_timeout)
        #: What `check` asks /api/version with (made by its first check).
        self._version_http: Any = None

    async def close(self) -> None:
        if self._version_http is not None:
            await self._version_http.aclose()
        await super().close()

    def ollama_url(self) -> str | None:
        return self.host

    async def check(self) -> OllamaStatus:
        """Ask /api/version; remember and return whether Ollama answers (and its version,
        which a model call alone does not tell)."""
        await self.client()  # httpx is imported with it
        import httpx
        if self._version_http is None:  # one for the daemon's life: checks come every 2 s
            # while Ollama is down (made after the model client, whose TLS context it shares)
            from ctxkeep.daemon.backends.transport import tls_context
            self._version_http = httpx.AsyncClient(base_url=self.host, timeout=3.0, verify=tls_context())
        try:
            response = await self._version_http.get("/api/version")
            response.raise_for_status()
            version = str(response.json().get("version", ""))
            self.status = OllamaStatus(host=self.host, reachable=True, version=version)
        except (httpx.HTTPError, ValueError) as exc:
            self.status = OllamaStatus(host=self.host, reachable=False,
                                       error=self.explain(exc).message)
        return self.status

    async def facts(self, model: str) -> ModelFacts:
        """Context length, size and capabilities of `model` (cached per daemon run)."""
        if model in self._facts:
            return self._facts[model]
        try:
            shown = await (await self.client()).show(model)
        except Exception as exc:  # every failure becomes a ModelCallError
            raise self.explain(exc, model) from None
        self.reached()
        info = shown.modelinfo or {}
        arch = info.get("general.architecture", "")
        length = info.get(f"{arch}.context_length") or next(
            (v for k, v in info.items() if k.endswith(".context_length")), 0)
        details = shown.details
        facts = ModelFacts(context_length=int(length or 0),
                           parameter_size=(details.parameter_size or "") if details else "",
                           capabilities=tuple(shown.capabilities or ()))
        self._facts[model] = facts
        return facts

    async def installed(self, details: bool = True) -> list[ModelInfo]:
        """The models Ollama has (/api/tags); with `details`, each with its context length
        (/api/show, cached) and whether it is loaded now (/api/ps)."""
        try:
            client = await self.client()
            listed = await client.list()
            running = await client.ps() if details else None
        except Exception as exc:  # every failure becomes a ModelCallError
            raise self.explain(exc) from None
        self.reached()
        self.listed = [m.model or "" for m in listed.models]
        loaded = {m.model for m in running.models} if running else set()
        out = []
        for m in listed.models:
            name = m.model or ""
            try:
                length = (await self.facts(name)).context_length if details else 0
            except ModelCallError:
                length = 0
            about = m.details
            out.append(ModelInfo(name=name, size=int(m.size or 0), loaded=name in loaded,
                                 parameter_size=(about.parameter_size or "") if about else "",
                                 family=(about.family or "") if about else "",
                                 context_length=length))
        return out

    async def loaded(self, model: str) -> bool | None:
        """Whether Ollama has `model` in memory now (/api/ps), or None when it does not
        answer that within a few seconds either."""
        try:
            async with asyncio.timeout(PS_TIMEOUT_S):  # not wait_for: on 3.11 it may swallow a cancel
                running = await (await self.client()).ps()
        except Exception:  # a timeout or an error: it does not answer
            return None
        wanted = model if ":" in model else f"{model}:latest"
        return any(m.model in (model, wanted) for m in running.models)

    async def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]:
        """Have Ollama download `model` (/api/pull): (status, completed, total) as it goes;
        raises ModelCallError when it cannot."""
        try:
            stream = await (await self.client()).pull(model, stream=True)
            self.reached()
            async for step in stream:
                yield step.status or "", int(step.completed or 0), int(step.total or 0)
        except ModelCallError:
            raise
        except Exception as exc:
            from ollama import ResponseError
            if isinstance(exc, ResponseError):
                raise ModelCallError(ErrorCode.MODEL_NOT_FOUND,
                                     f"Ollama could not pull {model!r}: {exc.error}: check the name "
                                     "(https://ollama.com/library)") from None
            raise self.explain(exc, model) from None

    async def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                          options: Mapping[str, Any], extras: ChatExtras,
                          on_sent: Callable[[], object] | None = None) -> AsyncGenerator[ChatChunk, None]:
        """Stream a chat; raises ModelCallError on any failure, including a cut stream.
        `on_sent` is called once the request is written to the server's socket."""
        try:
            stream = await (await self.client()).chat(model, messages, stream=True,
                                                      options=options, **extras.fields())
            self.reached()
            done, notes = False, dict[str, int]()
            async for chunk in sending(stream, on_sent, notes):
                done = bool(chunk.done)
                yield chunk_of(chunk, self.name, notes.get("cached"))
            if not done:
                raise ModelCallError(ErrorCode.STREAM_INTERRUPTED,
                                     "Ollama ended the answer before its final chunk: send again")
        except ModelCallError:
            raise
        except Exception as exc:
            raise self.explain(exc, model) from None

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> ChatChunk:
        """One non-streaming chat call (summaries)."""
        try:
            response = await (await self.client()).chat(model, messages, stream=False,
                                                        options=options)
        except Exception as exc:
            raise self.explain(exc, model) from None
        self.reached()
        return chunk_of(response, self.name)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embeddings from /api/embed (one call for all texts)."""
        try:
            response = await (await self.client()).embed(model=model, input=texts)
        except Exception as exc:
            raise self.explain(exc, model) from None
        self.reached()
        vectors = [list(v) for v in response.embeddings]
        if len(vectors) != len(texts):
            raise ModelCallError(ErrorCode.OLLAMA_ERROR, "Ollama returned the wrong number of embeddings")
        return vectors

    async def count_prompt(self, model: str, messages: Sequence[Mapping[str, Any]],
                           tools: list[dict[str, Any]] | None = None,
                           options: Mapping[str, Any] | None = None) -> int | None:
        """The prompt's tokens by the model's own tokenizer and template. Ollama's API has
        no tokenizer page, so the server reads the prompt for one token of answer, with the
        chat's options (its `num_ctx`: the model is not loaded again, and the prompt stays
        in its cache for the chat). None where it cannot say: a prompt over the window is
        refused (`truncate: false`), not cut; an Ollama older than 0.12 would cut it
        silently (its count would then say nothing), so it is not asked."""
        if not refuses_overflow(self.status.version):
            return None
        reading = {**(options or {}), "num_predict": 1}
        offered = {"tools": tools} if tools else {}
        try:
            response = await (await self.client()).chat(model, messages, stream=False, options=reading,
                                                        **offered)
        except Exception as exc:
            error = self.explain(exc, model)
            if error.code == ErrorCode.CONTEXT_OVERFLOW:
                return None  # refused as longer than the window: the estimate decides
            raise error from None
        self.reached()
        count = response.prompt_eval_count or 0
        window = int(reading.get("num_ctx") or 0)
        return count if count > 0 and not (window and count >= window) else None

    def explain(self, exc: BaseException, model: str = "") -> ModelCallError:
        """A ModelCallError saying what went wrong and what to do next (noting whether
        Ollama answered at all)."""
        error, answered = classify(exc, self.host, model, self._timeouts[1])
        if error.code == ErrorCode.OLLAMA_UNREACHABLE:
            self.unreachable()
        elif answered:
            self.reached()  # it answered, with an error
        return error
