"""The HTTP front door: aiohttp on the daemon's own event loop, serving the sockets
listeners.py bound (the Unix socket http.sock and, when configured, TCP, where the bearer
token is asked for)."""

import asyncio
import hmac
import logging

from aiohttp import web

from ctxkeep.daemon.handlers.registry import Caller
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.transports.http.bounds import ConnectionCap, Throttle, connection_cap, read_body, request_logger
from ctxkeep.daemon.transports.http.chat import Chats
from ctxkeep.daemon.transports.http.errors import HttpError, ollama_error, openai_error
from ctxkeep.daemon.transports.http.guard import Guard, over_tcp
from ctxkeep.daemon.transports.http.listeners import BACKLOG, Listeners, host_port
from ctxkeep.daemon.transports.http.ollama_api import OllamaApi
from ctxkeep.daemon.transports.http.openai_api import OpenAIApi
from ctxkeep.daemon.transports.http.passthrough import Passthrough
from ctxkeep.protocol import ErrorCode

log = logging.getLogger(__name__)
#: Seconds requests still in flight get when ctxkeepd stops (aiohttp's default is 60: a
#: stop must be quick); then they are cancelled, a turn's partial answer kept.
SHUTDOWN_S = 3.0
#: HTTP clients send text for a model: an `@` is not a file to read on this machine.
HTTP_CALLER = Caller(remote=True, files=False)


class FrontDoor:
    """Serves Ollama's and OpenAI's APIs over the engine's handlers."""

    def __init__(self, services: Services, listeners: Listeners) -> None:
        """`listeners`: the sockets to serve, bound (Listeners.bind)."""
        config = services.config
        self.listeners = listeners
        self.token = listeners.token
        self.config = config
        self.chats = Chats(services, HTTP_CALLER)
        self.passthrough = Passthrough(services.backend.ollama_url())
        self.guard = Guard(host_port(listeners.listen)[0] if listeners.listen else "localhost", config.http_origins)
        self.throttle = Throttle()
        self.app = web.Application(client_max_size=config.http_max_body_bytes, middlewares=[
            self._errors, self.guard.middleware, self._auth, self._body])
        self.app.on_response_prepare.append(self.guard.on_prepare)
        self.app.add_routes(OllamaApi(self.chats, self.passthrough).routes())
        self.app.add_routes(OpenAIApi(self.chats).routes())
        self.runner = web.AppRunner(self.app, handler_cancellation=True, access_log=None,
                                    keepalive_timeout=config.http_idle_timeout, logger=request_logger(),
                                    shutdown_timeout=SHUTDOWN_S)
        self.cap: ConnectionCap | None = None

    async def start(self) -> None:
        await self.runner.setup()
        assert self.runner.server is not None
        self.cap = ConnectionCap(self.runner.server, connection_cap(self.config.http_max_connections),
                                 self.throttle)
        for sock in self.listeners.sockets():
            await web.SockSite(self.runner, sock, backlog=BACKLOG).start()
        where = self.listeners
        log.info("HTTP (Ollama and OpenAI APIs) on %s%s", where.socket_path,
                 f" and {where.url} ({'token' if self.token else 'no token'})" if where.listen else "")

    async def close(self) -> None:
        await self.runner.cleanup()
        self.chats.close()
        await self.passthrough.close()

    @staticmethod
    def _error(request: web.Request, error: HttpError) -> web.Response:
        return openai_error(error) if request.path.startswith("/v1/") else ollama_error(error)

    @web.middleware
    async def _errors(self, request: web.Request, handler) -> web.StreamResponse:
        """Whatever a request breaks, its client gets an error in its API's shape (logged
        once a minute per kind at most), and the front door keeps serving."""
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # the front door must keep serving
            if self.throttle.allow(f"internal|{request.path}|{type(exc).__name__}"):
                log.exception("HTTP %s %s failed", request.method, request.path[:200])
            return self._error(request, HttpError(ErrorCode.INTERNAL.value, f"internal error ({type(exc).__name__}): "
                                                  "see the daemon's log", 500))

    @web.middleware
    async def _auth(self, request: web.Request, handler) -> web.StreamResponse:
        """Over TCP, the bearer token (the Unix socket is the user's own, 0600)."""
        if over_tcp(request) and self.token:
            scheme, _, given = request.headers.get("Authorization", "").strip().partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
                error = HttpError(ErrorCode.INVALID_REQUEST.value, "a bearer token is required over TCP: "
                                  "send `Authorization: Bearer TOKEN` (OpenAI clients: the API key); "
                                  "`ctxkeep daemon http` prints it", 401)
                response = self._error(request, error)
                response.headers["WWW-Authenticate"] = 'Bearer realm="ctxkeepd"'
                return response
            if self.cap is not None:
                self.cap.trust(request.protocol)  # its connection is never closed to make room
        return await handler(request)

    @web.middleware
    async def _body(self, request: web.Request, handler) -> web.StreamResponse:
        """A request's body read in full before its handler runs, within http_body_timeout,
        and its ctxkeep header as text (a header that is not UTF-8 is a 400, not a crash)."""
        try:
            request.headers.get("X-Ctxkeep-Session", "").encode("utf-8")
        except UnicodeEncodeError:
            return self._error(request, HttpError(ErrorCode.INVALID_REQUEST.value,
                                                  "the X-Ctxkeep-Session header is not UTF-8 text"))
        if request.body_exists:
            try:
                await read_body(request, self.config.http_body_timeout)
            except web.HTTPRequestEntityTooLarge:
                return self._error(request, HttpError(
                    ErrorCode.FRAME_TOO_LARGE.value, f"the body is over {self.config.http_max_body_bytes:,} bytes, "
                    "the most taken (http_max_body_bytes): send less, or @file:summary for a file's text", 413))
        return await handler(request)
