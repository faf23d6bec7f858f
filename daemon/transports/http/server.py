"""The HTTP front door's listener: aiohttp on the daemon's own event loop, always on a
Unix socket (http.sock, in the runtime folder, 0600) and, when `http_listen` is set, on
TCP, where a bearer token is required unless `http_auth = "none"` (loopback only)."""

import asyncio
import hmac
import ipaddress
import logging
import socket
from pathlib import Path

from aiohttp import web

from ctxkeep.daemon.config import ConfigError
from ctxkeep.daemon.handlers.registry import Caller
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.transports.http.bounds import ConnectionCap, Throttle, connection_cap, read_body, request_logger
from ctxkeep.daemon.transports.http.chat import Chats
from ctxkeep.daemon.transports.http.errors import HttpError, ollama_error, openai_error
from ctxkeep.daemon.transports.http.guard import Guard, over_tcp
from ctxkeep.daemon.transports.http.ollama_api import OllamaApi
from ctxkeep.daemon.transports.http.openai_api import OpenAIApi
from ctxkeep.daemon.transports.http.passthrough import Passthrough
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.http_token import exposed, read_or_make

log = logging.getLogger(__name__)
#: Seconds requests still in flight get when ctxkeepd stops (aiohttp's default is 60: a
#: stop must be quick); then they are cancelled, a turn's partial answer kept.
SHUTDOWN_S = 3.0
#: HTTP clients send text for a model: an `@` is not a file to read on this machine.
HTTP_CALLER = Caller(remote=True, files=False)


def host_port(listen: str) -> tuple[str, int]:
    """`http_listen` ("127.0.0.1:11435", "[::1]:11435") as (host, port)."""
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"http_listen = {listen!r}: write it as HOST:PORT, e.g. 127.0.0.1:11435")
    return host.strip("[]"), int(port)


def check(listen: str, auth: str) -> None:
    """Refuse what would expose sessions: no token on an address other machines reach."""
    if listen and auth == "none":
        host, _ = host_port(listen)
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ConfigError(f'http_auth = "none" is refused on {listen}: other machines '
                              'could read and drive every session; use a loopback address or the token')


def adopted_listen(sock: socket.socket) -> str:
    """A socket systemd passed (ctxkeep-http.socket) as an `http_listen` value."""
    name = sock.getsockname()
    if not isinstance(name, tuple):
        raise ConfigError("ctxkeep-http.socket must listen on TCP (HOST:PORT); the Unix socket "
                          "http.sock is ctxkeepd's own")
    host, port = name[0], name[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class FrontDoor:
    """Serves Ollama's and OpenAI's APIs over the engine's handlers."""

    def __init__(self, services: Services, socket_path: Path, token_path: Path,
                 adopted: int | None = None) -> None:
        """`adopted`: a listening TCP socket's descriptor that systemd passed (it is served
        instead of `http_listen`)."""
        config = services.config
        self.socket_path = socket_path
        self.adopted = socket.socket(fileno=adopted) if adopted is not None else None
        self.listen = adopted_listen(self.adopted) if self.adopted else config.http_listen
        if self.adopted and config.http_listen and config.http_listen != self.listen:
            log.warning("HTTP: serving %s, the socket systemd passed (ctxkeep-http.socket), "
                        "not http_listen = %s", self.listen, config.http_listen)
        check(self.listen, config.http_auth)
        self.token = ""
        if self.listen and config.http_auth == "token":
            if exposed(token_path):
                log.warning("HTTP: %s could be read by other users: a new token was made (0600); "
                            "clients need the new one (`ctxkeep daemon http` prints it)", token_path)
            self.token = read_or_make(token_path)
        self.config = config
        self.chats = Chats(services, HTTP_CALLER)
        self.passthrough = Passthrough(services.backend.ollama_url())
        self.guard = Guard(host_port(self.listen)[0] if self.listen else "localhost", config.http_origins)
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

    @property
    def url(self) -> str:
        return f"http://{self.listen}" if self.listen else ""

    async def start(self) -> None:
        await self.runner.setup()
        assert self.runner.server is not None
        self.cap = ConnectionCap(self.runner.server, connection_cap(self.config.http_max_connections),
                                 self.throttle)
        if self.socket_path.exists():
            self.socket_path.unlink()  # a stale one: the instance lock says none serves it
        await web.UnixSite(self.runner, str(self.socket_path)).start()
        self.socket_path.chmod(0o600)
        if self.adopted is not None:
            await web.SockSite(self.runner, self.adopted).start()
        elif self.listen:
            host, port = host_port(self.listen)
            await web.TCPSite(self.runner, host, port).start()
            if port == 0:  # the port the system chose, as clients must be told it
                bound = next(a for a in self.runner.addresses if isinstance(a, tuple))
                self.listen = f"[{bound[0]}]:{bound[1]}" if ":" in bound[0] else f"{bound[0]}:{bound[1]}"
        log.info("HTTP (Ollama and OpenAI APIs) on %s%s", self.socket_path,
                 f" and {self.url} ({'token' if self.token else 'no token'})" if self.listen else "")

    async def close(self) -> None:
        await self.runner.cleanup()
        self.chats.close()
        await self.passthrough.close()
        if self.socket_path.exists():
            self.socket_path.unlink()

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
