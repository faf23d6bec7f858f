"""Several model servers behind one backend.

Each call goes to the servers in the order `Routing` gives (backends/routing.py): a turn
fails over before any of its answer is shown, never after. Counts and calibration are the
engine's, per model: which server answered does not matter to a session.
"""

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from ctxkeep.daemon.backends.facts import ModelFacts, same_model
from ctxkeep.daemon.backends.host import Host
from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras, ModelCallError
from ctxkeep.daemon.backends.routing import SERVER_FAILURES, Routing
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.structs import BackendStatus, ModelInfo, OllamaStatus

T = TypeVar("T")


class Hosts:
    """The daemon's model servers as one `ModelBackend`."""

    def __init__(self, hosts: list[Host]) -> None:
        self.routing = Routing(hosts)
        self.members = hosts
        self.changed = self.routing.changed
        self._serving: dict[str, Host] = {}

    # -- what the daemon reads ------------------------------------------------------

    @property
    def host(self) -> str:
        return self.members[0].backend.host

    @property
    def status(self) -> OllamaStatus:
        return self.routing.status

    def hosts(self) -> list[BackendStatus]:
        return self.routing.hosts()

    async def check(self, down_too: bool = False) -> OllamaStatus:
        return await self.routing.check(down_too)

    def ranked(self, model: str) -> list[Host]:
        return self.routing.ranked(model)

    @property
    def listed(self) -> list[str] | None:
        lists = [h.backend.listed for h in self.members if h.backend.listed is not None]
        return None if not lists else sorted({n for names in lists for n in names})

    def ollama_url(self) -> str | None:
        return next((h.backend.host for h in self.members if h.backend.kind == "ollama"), None)

    def preload(self) -> None:
        for h in self.members:
            h.backend.preload()

    async def close(self) -> None:
        await asyncio.gather(*(h.backend.close() for h in self.members))

    async def _each(self, model: str, call: Callable[[Any], Awaitable[T]],
                    usable: Callable[[Host], bool] = lambda h: True, answer: bool = False,
                    marks_down: bool = True) -> T:
        """`call(backend)` on the first (`usable`) server that answers (`answer`: a chat);
        a server that fails it is marked down for every call unless not `marks_down` (an
        embedding that fails says nothing of the server's answers)."""
        tried: list[tuple[Host, ModelCallError]] = []
        for host in filter(usable, self.ranked(model)):
            host.busy += 1
            host.answering += answer
            if not answer:
                host.side_started()
            try:
                if answer:
                    await host.free_for_an_answer()
                result = await call(host.backend)
            except ModelCallError as exc:
                tried.append((host, exc))
                if self.routing.goes_on(host, exc, marks_down):
                    continue
                raise
            finally:
                host.busy -= 1
                host.answering -= answer
                if not answer:
                    host.side_ended()
            self.routing.up(host)
            return result
        raise self.routing.all_failed(model, tried)

    # -- model calls ----------------------------------------------------------------

    def known_facts(self, model: str) -> ModelFacts | None:
        known = [f for f in (h.backend.known_facts(model) for h in self.ranked(model)) if f is not None]
        return _narrowest(known) if known else None

    async def facts(self, model: str) -> ModelFacts:
        """What the servers say of `model`: the smallest window of those that serve it, so
        a prompt fits whichever answers."""
        ranked = self.ranked(model)
        asked = ranked[:1] + self._beside(ranked, model)
        known = [f for f in (h.backend.known_facts(model) for h in asked) if f is not None]
        if asked and len(known) == len(asked):  # each said it already (every turn asks): no call to route
            return _narrowest(known)
        found = [await self._each(model, lambda b: b.facts(model))]
        for host in self._beside(self.ranked(model), model):
            try:
                found.append(await host.backend.facts(model))
            except ModelCallError:
                pass
        return _narrowest(found)

    @staticmethod
    def _beside(ranked: list[Host], model: str) -> list[Host]:
        """The servers asked for a model's facts besides the first to answer: the others that
        serve it and are due to be asked."""
        return [h for h in ranked[1:] if h.serves(model) and h.due(time.monotonic())]

    async def installed(self, details: bool = True) -> list[ModelInfo]:
        """Every server's models, one row per model with the servers that have it; a
        server that cannot be asked is left out (`hosts()` says it is down)."""
        merged: dict[str, ModelInfo] = {}
        asked = await asyncio.gather(*(self._models_of(h, details) for h in self.members), return_exceptions=True)
        failures = [a for a in asked if isinstance(a, BaseException)]
        if len(failures) == len(asked):
            raise failures[0] if isinstance(failures[0], ModelCallError) else ModelCallError(
                ErrorCode.OLLAMA_ERROR, f"listing models failed: {failures[0]!r}")
        for host, models in zip(self.members, asked):
            for m in [] if isinstance(models, BaseException) else models:
                if host.models and not any(same_model(m.name, n) or m.name == n for n in host.models):
                    continue
                if m.name in merged:
                    merged[m.name].hosts.append(host.backend.name)
                    merged[m.name].loaded |= m.loaded
                else:
                    m.hosts = [host.backend.name]
                    merged[m.name] = m
        return list(merged.values())

    @staticmethod
    async def _models_of(host: Host, details: bool) -> list[ModelInfo]:
        """A server's models: asked, or as it last listed them while it answers a call."""
        if host.busy and host.backend.listed is not None:
            return [ModelInfo(name=n, loaded=True) for n in host.backend.listed]
        return await host.backend.installed(details)

    async def loaded(self, model: str) -> bool | None:
        host = self._serving.get(model) or self.ranked(model)[0]
        return await host.backend.loaded(model)

    async def pull(self, model: str) -> AsyncIterator[tuple[str, int, int]]:
        """Download `model` into the first Ollama server that is up."""
        now = time.monotonic()
        ollamas = sorted((h for h in self.members if h.backend.kind == "ollama"), key=lambda h: not h.due(now))
        if not ollamas:
            raise ModelCallError(ErrorCode.INVALID_ARGUMENT, "no model server here can download models (none is "
                                 "Ollama): load the model in the server itself")
        async for step in ollamas[0].backend.pull(model):
            yield step

    async def stream_chat(self, model: str, messages: Sequence[Mapping[str, Any]],
                          options: Mapping[str, Any], extras: ChatExtras,
                          on_sent: Callable[[], object] | None = None) -> AsyncGenerator[ChatChunk, None]:
        """The answer of the first server that sends a first chunk; a failure after that
        ends the stream (what came is the turn's partial answer)."""
        tried: list[tuple[Host, ModelCallError]] = []
        for host in self.ranked(model):
            host.busy += 1
            host.answering += 1
            self._serving[model] = host
            stream = host.backend.stream_chat(model, messages, options, extras, on_sent)
            try:
                try:
                    await host.free_for_an_answer()
                    first = await anext(stream)
                except ModelCallError as exc:
                    tried.append((host, exc))
                    if self.routing.goes_on(host, exc):
                        continue
                    raise
                self.routing.up(host)
                yield first
                try:
                    async for chunk in stream:
                        yield chunk
                except ModelCallError as exc:
                    if exc.code in SERVER_FAILURES:
                        self.routing.down(host)
                    raise
                return
            finally:
                host.busy -= 1
                host.answering -= 1
                await stream.aclose()
        raise self.routing.all_failed(model, tried)

    async def chat_once(self, model: str, messages: Sequence[Mapping[str, Any]],
                        options: Mapping[str, Any]) -> ChatChunk:
        return await self._each(model, lambda b: b.chat_once(model, messages, options), answer=True)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embeddings from a server that serves `model` and is not streaming an answer,
        unless it takes requests beside one (a second request would cut the answer short
        on a server of one slot)."""
        if all(h.busy and not h.backend.takes_side_requests() for h in self.ranked(model)):
            raise ModelCallError(ErrorCode.BUSY, f"every server of {model!r} is answering a chat and "
                                 "takes one request at a time: embeddings wait")
        return await self._each(model, lambda b: b.embed(model, texts),
                                lambda h: not h.busy or h.backend.takes_side_requests(), marks_down=False)

    async def count_prompt(self, model: str, messages: Sequence[Mapping[str, Any]],
                           tools: list[dict[str, Any]] | None = None,
                           options: Mapping[str, Any] | None = None) -> int | None:
        """The prompt's tokens by the first server of `model` that can count it and is
        free to: one of one slot that streams an answer is not asked (it would cut the
        stream); one busy with a side request (an embedding, the model's facts) is, as the
        server queues it."""
        for host in self.ranked(model):
            if host.answering and not host.backend.takes_side_requests():
                continue
            host.busy += 1
            host.side_started()
            try:
                found = await host.backend.count_prompt(model, messages, tools, options)
            except ModelCallError:
                found = None
            finally:
                host.busy -= 1
                host.side_ended()
            if found is not None:
                return found
        return None


def _narrowest(found: list[ModelFacts]) -> ModelFacts:
    """The facts with the smallest known window (0 is unknown, not small)."""
    known = [f for f in found if f.context_length] or found
    return min(known, key=lambda f: f.context_length)
