"""The front door's listening sockets, bound when the daemon opens — before the HTTP library
is even imported (server.py serves them once it is): ZeroMQ clients are answered meanwhile,
and an HTTP client that connects in those first instants waits in the backlog instead of
being refused. Always the Unix socket http.sock (0600, in the runtime folder); TCP too when
`http_listen` is set or systemd passed one (ctxkeep-http.socket), where a bearer token is
required unless `http_auth = "none"` (loopback only)."""

import ipaddress
import logging
import resource
import socket
from pathlib import Path

from ctxkeep.daemon.config import Config, ConfigError
from ctxkeep.protocol.http_token import exposed, read_or_make

log = logging.getLogger(__name__)
#: Connections a listener holds before they are served (aiohttp's own default).
BACKLOG = 128


def raise_descriptor_limit() -> int:
    """Raise this process's soft limit on open descriptors to its hard limit (systemd's
    default soft limit is 1,024); returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d: %s", soft, exc)
    return soft


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


def as_listen(sock: socket.socket) -> str:
    """A listening TCP socket's address as an `http_listen` value."""
    name = sock.getsockname()
    if not isinstance(name, tuple):
        raise ConfigError("ctxkeep-http.socket must listen on TCP (HOST:PORT); the Unix socket "
                          "http.sock is ctxkeepd's own")
    host, port = name[0], name[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Listeners:
    """Where the front door listens, and the sockets once `bind` made them."""

    def __init__(self, config: Config, socket_path: Path, token_path: Path, adopted: int | None = None) -> None:
        """`adopted`: a listening TCP socket's descriptor that systemd passed (it is served
        instead of `http_listen`)."""
        self.socket_path = socket_path
        self.adopted = socket.socket(fileno=adopted) if adopted is not None else None
        self.listen = as_listen(self.adopted) if self.adopted else config.http_listen
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
        self.unix: socket.socket | None = None
        self.tcp: list[socket.socket] = [self.adopted] if self.adopted else []

    @property
    def url(self) -> str:
        return f"http://{self.listen}" if self.listen else ""

    def bind(self) -> None:
        """Listen on the Unix socket (replacing a stale file: the instance lock says no
        other daemon serves it) and on TCP where configured. Raises OSError."""
        if self.socket_path.exists():
            self.socket_path.unlink()
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            unix.bind(str(self.socket_path))
            self.socket_path.chmod(0o600)
            unix.listen(BACKLOG)
        except OSError:
            unix.close()
            raise
        self.unix = unix
        if not self.tcp and self.listen:
            self._bind_tcp(*host_port(self.listen))

    def _bind_tcp(self, host: str, port: int) -> None:
        """Listen on every address `host` names ("localhost": 127.0.0.1 and ::1, where both
        are), as asyncio's own servers do; on port 0, all on the port the system chose for
        the first, which `listen` then says (clients must be told it)."""
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, _, _, _, address in dict.fromkeys(found):
            self.tcp.append(socket.create_server((address[0], port, *address[2:]), family=family, backlog=BACKLOG))
            if port == 0:
                port = self.tcp[0].getsockname()[1]
                self.listen = as_listen(self.tcp[0])

    def sockets(self) -> list[socket.socket]:
        return [s for s in (self.unix, *self.tcp) if s is not None]

    def close(self) -> None:
        """Close the sockets (those the server took are closed already) and remove http.sock."""
        for sock in self.sockets():
            sock.close()
        if self.unix is not None and self.socket_path.exists():
            self.socket_path.unlink()
        self.unix, self.tcp = None, []
