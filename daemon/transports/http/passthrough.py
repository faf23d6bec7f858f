"""Ollama's own endpoints that hold no conversation (the loaded models, the version,
embeddings, pulls; a model's facts from the Ollama that serves it), forwarded to the (first,
or a named) Ollama ctxkeepd uses: the client gets Ollama's answer as Ollama sent it,
streamed as it comes. Where no model server is Ollama, they are answered 501, saying so."""

from typing import Any

import aiohttp
from aiohttp import web

from ctxkeep.daemon.transports.http.errors import HttpError
from ctxkeep.protocol import ErrorCode

#: Request headers passed on (others, such as the front door's Authorization, are not).
FORWARDED = ("Content-Type", "Accept")


class Passthrough:
    """One connection pool to Ollama, for the daemon's lifetime."""

    def __init__(self, host: str | None) -> None:
        self.host = (host or "").rstrip("/")
        self._session: aiohttp.ClientSession | None = None

    def _check(self, path: str) -> None:
        if not self.host:
            raise HttpError(ErrorCode.INVALID_REQUEST.value, f"{path} is Ollama's own, and none of ctxkeepd's "
                            "model servers is Ollama: use the OpenAI API (/v1/...) or `ctxkeep models`", 501)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
        return self._session

    def _unreachable(self, exc: Exception) -> HttpError:
        return HttpError(ErrorCode.OLLAMA_UNREACHABLE.value,
                         f"Ollama at {self.host} is not reachable ({exc}): start it "
                         "(`ollama serve`) or set ollama_host in ctxkeep's config.toml")

    async def json(self, path: str, body: dict[str, Any] | None = None, host: str = "") -> Any:
        """Ollama's (`host`'s, else the first's) JSON answer to GET `path` (POST, with
        `body`); its error raised as HttpError."""
        self._check(path)
        try:
            async with self._client().request("POST" if body is not None else "GET",
                                              (host.rstrip("/") or self.host) + path, json=body) as answer:
                try:
                    data = await answer.json(content_type=None)
                except ValueError:  # not JSON: the server is not Ollama, or broke off
                    raise HttpError(ErrorCode.OLLAMA_ERROR.value, f"{self.host}{path} did not answer JSON "
                                    f"(status {answer.status}): is ollama_host an Ollama server?", 502) from None
                if answer.status >= 400:
                    message = data.get("error", "") if isinstance(data, dict) else str(data)
                    code = ErrorCode.MODEL_NOT_FOUND if answer.status == 404 else ErrorCode.OLLAMA_ERROR
                    raise HttpError(code.value, f"Ollama: {message}", answer.status)
                return data
        except aiohttp.ClientError as exc:
            raise self._unreachable(exc) from None

    async def forward(self, request: web.Request, path: str, body: bytes | None = None,
                      host: str = "") -> web.StreamResponse:
        """`request` sent on to Ollama's (`host`'s, else the first's) `path`; its answer
        streamed back. A GET or HEAD goes without a body (one sent with it is not
        Ollama's to read: a server that leaves it unread would take it for the next request
        on the pooled connection)."""
        self._check(path)
        data = body if body is not None else await request.read()
        if request.method in ("GET", "HEAD"):
            data = b""
        headers = {k: request.headers[k] for k in FORWARDED if k in request.headers}
        try:
            upstream = await self._client().request(request.method, (host.rstrip("/") or self.host) + path,
                                                   data=data or None, headers=headers)
        except aiohttp.ClientError as exc:
            raise self._unreachable(exc) from None
        async with upstream:
            response = web.StreamResponse(status=upstream.status)
            response.content_type = upstream.content_type
            await response.prepare(request)
            async for piece in upstream.content.iter_any():
                await response.write(piece)
            await response.write_eof()
            return response
