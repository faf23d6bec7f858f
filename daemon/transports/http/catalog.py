"""Ollama's model list (`/api/tags`) and a model's facts (`/api/show`) across every model
server ctxkeepd chats with: an Ollama client sees each model ctxkeepd would answer with,
whichever server has it (each Ollama's own entries as it sent them; an OpenAI-compatible
server's models in Ollama's shape, with what ctxkeepd knows of them)."""

from typing import Any

from aiohttp import web

from ctxkeep.daemon.backends.hosts import Hosts
from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.transports.http.errors import HttpError
from ctxkeep.daemon.transports.http.passthrough import Passthrough
from ctxkeep.daemon.transports.http.wire import read_json
from ctxkeep.protocol import ErrorCode

EPOCH = "1970-01-01T00:00:00Z"


def tag_of(name: str, size: int = 0, parameter_size: str = "", family: str = "") -> dict[str, Any]:
    """A model of a server that is not Ollama, as an /api/tags entry."""
    return {"name": name, "model": name, "modified_at": EPOCH, "size": size, "digest": "",
            "details": {"format": "", "family": family, "families": [family] if family else None,
                        "parameter_size": parameter_size, "quantization_level": ""}}


class Catalog:
    """Answers /api/tags and /api/show for every model server."""

    def __init__(self, backend: Hosts, passthrough: Passthrough) -> None:
        self.backend = backend
        self.passthrough = passthrough

    async def tags(self) -> dict[str, Any]:
        """Every server's models, once each (the first server that lists a name gives its entry)."""
        try:
            rows = await self.backend.installed(details=False)
        except ModelCallError as error:
            raise HttpError(error.code.value, error.message) from None
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for host in self.backend.members:
            if host.backend.kind != "ollama" or not any(host.backend.name in r.hosts for r in rows):
                continue
            try:  # Ollama's own entries, digests and details as it keeps them
                listed = (await self.passthrough.json("/api/tags", host=host.backend.host)).get("models") or []
            except HttpError:
                continue  # gone since: its rows below stand in
            for entry in listed:
                name = entry.get("name") or entry.get("model")
                if name and name not in seen and (not host.models or name in host.models or any(
                        r.name == name and host.backend.name in r.hosts for r in rows)):
                    seen.add(name)
                    out.append(entry)
        out.extend(tag_of(r.name, r.size, r.parameter_size, r.family) for r in rows if r.name not in seen)
        return {"models": out}

    async def show(self, request: web.Request) -> web.StreamResponse:
        """The facts of a model from the server that serves it: Ollama's /api/show as it
        answers, or what an OpenAI-compatible server told ctxkeepd, in Ollama's shape."""
        body = await read_json(request, dict)
        model = str(body.get("model") or body.get("name") or "") if isinstance(body, dict) else ""
        if not model:
            raise HttpError(ErrorCode.INVALID_REQUEST.value, "model is required")
        host = self.backend.ranked(model)[0]
        if host.backend.kind == "ollama":
            return await self.passthrough.forward(request, "/api/show", await request.read(), host=host.backend.host)
        try:
            facts = self.backend.known_facts(model) or await self.backend.facts(model)
        except ModelCallError as error:
            raise HttpError(error.code.value, error.message) from None
        return web.json_response({
            "modelfile": "", "parameters": "", "template": "", "modified_at": EPOCH,
            "details": tag_of(model, parameter_size=facts.parameter_size)["details"],
            "model_info": {"general.architecture": "unknown", "unknown.context_length": facts.context_length},
            "capabilities": list(facts.capabilities) or ["completion"]})
