"""The HTTP front door's listener: aiohttp on the daemon's own event loop, always on a
Unix socket (http.sock, in the runtime folder, 0600) and, when `http_listen` is set, on
TCP, where a bearer token is required unless `http_auth = "none"` (loopback only)."""

import hmac
import ipaddress
import logging
import socket
from pathlib import Path

from aiohttp import web

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.http_token import read_or_make
from ctxkeep.daemon.config import ConfigError
from ctxkeep.daemon.handlers.registry import Caller
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.transports.http.chat import Chats
from ctxkeep.daemon.transports.http.errors import HttpError, ollama_error, openai_error
from ctxkeep.daemon.transports.http.ollama_api import OllamaApi
from ctxkeep.daemon.transports.http.openai_api import OpenAIApi
from ctxkeep.daemon.transports.http.passthrough import Passthrough

log = logging.getLogger(__name__)
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
        self.token = read_or_make(token_path) if self.listen and config.http_auth == "token" else ""
        self.chats = Chats(services, HTTP_CALLER)
        self.passthrough = Passthrough(services.backend.ollama_url())
        self.app = web.Application(client_max_size=config.http_max_body_bytes, middlewares=[self._auth])
        self.app.add_routes(OllamaApi(self.chats, self.passthrough).routes())
        self.app.add_routes(OpenAIApi(self.chats).routes())
        self.runner = web.AppRunner(self.app, handler_cancellation=True, access_log=None)

    @property
    def url(self) -> str:
        return f"http://{self.listen}" if self.listen else ""

    async def start(self) -> None:
        await self.runner.setup()
        if self.socket_path.exists():
            self.socket_path.unlink()  # a stale one: the instance lock says none serves it
        await web.UnixSite(self.runner, str(self.socket_path)).start()
        self.socket_path.chmod(0o600)
        if self.adopted is not None:
            await web.SockSite(self.runner, self.adopted).start()
        elif self.listen:
            host, port = host_port(self.listen)
            await web.TCPSite(self.runner, host, port).start()
        log.info("HTTP (Ollama and OpenAI APIs) on %s%s", self.socket_path,
                 f" and {self.url} ({'token' if self.token else 'no token'})" if self.listen else "")

    async def close(self) -> None:
        await self.runner.cleanup()
        self.chats.close()
        await self.passthrough.close()
        if self.socket_path.exists():
            self.socket_path.unlink()

    @web.middleware
    async def _auth(self, request: web.Request, handler) -> web.StreamResponse:
        """Over TCP, the bearer token (the Unix socket is the user's own, 0600)."""
        over_tcp = request.transport is not None and \
            isinstance(request.transport.get_extra_info("sockname"), tuple)
        if over_tcp and self.token:
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                error = HttpError(ErrorCode.INVALID_REQUEST.value, "a bearer token is required over TCP: "
                                  "send `Authorization: Bearer TOKEN` (OpenAI clients: the API key); "
                                  "`ctxkeep daemon http` prints it", 401)
                return openai_error(error) if request.path.startswith("/v1/") else ollama_error(error)
        return await handler(request)
