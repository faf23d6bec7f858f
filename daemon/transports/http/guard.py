"""Who may speak to the front door over TCP, as Ollama decides it: a browser page only from an
allowed origin (`http_origins`, as `OLLAMA_ORIGINS`; CORS preflights answered for those),
and, on a loopback address, only under a name of this machine (a rebound DNS name is refused).
The Unix socket (http.sock, 0600) is the user's own and is not checked."""

import fnmatch
import ipaddress
import socket

from aiohttp import web

#: Ollama's default allowed origins (envconfig.AllowedOrigins), with any port.
DEFAULT_ORIGINS = tuple(f"{scheme}://{host}{port}" for scheme in ("http", "https")
                        for host in ("localhost", "127.0.0.1", "0.0.0.0", "[::1]") for port in ("", ":*")) + (
    "app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*")
#: What a browser may send across origins (OpenAI and Ollama clients, and ctxkeep's own header).
ALLOW_HEADERS = "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, X-Stainless-Lang, " \
    "X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Runtime, " \
    "X-Stainless-Runtime-Version, X-Stainless-Async, X-Ctxkeep-Session, X-Ctxkeep-Memory"
ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"
#: The allowed origin a request came from (its response carries the CORS headers).
CORS_ORIGIN = web.RequestKey("cors_origin", str)


#: What an answer says of its prompt (answering.added_headers), readable by a page's script.
EXPOSE_HEADERS = "X-Ctxkeep-Memory-Added, X-Ctxkeep-Recalled, X-Ctxkeep-Recall-Cut"


def over_tcp(request: web.Request) -> bool:
    return request.transport is not None and isinstance(request.transport.get_extra_info("sockname"), tuple)


def loopback(host: str) -> bool:
    """Whether an address (a name or an IP) stays on this machine."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host of a Host header, without its port ("[::1]:80" -> "::1")."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """The Origin and Host checks, and CORS, as one aiohttp middleware."""

    def __init__(self, listen_host: str, origins: list[str]) -> None:
        self.origins = DEFAULT_ORIGINS + tuple(o.rstrip("/") for o in origins)
        self.on_loopback = loopback(listen_host)
        self.names = {"localhost", listen_host.strip("[]"), socket.gethostname().lower()}

    def origin_allowed(self, origin: str) -> bool:
        """Whether an origin matches an allowed one, `*` matching any text (a bracket is
        itself, as in an IPv6 origin like http://[::1]:8080, never a set of characters)."""
        return any(fnmatch.fnmatchcase(origin.rstrip("/").lower(), o.lower().replace("[", "[[]"))
                   for o in self.origins)

    def host_allowed(self, header: str) -> bool:
        """As Ollama's allowedHost: on a loopback address, a name of this machine (localhost,
        its host name, a name under .localhost, .local or .internal, as Docker's
        host.docker.internal) or an IP address that is loopback, private or unspecified."""
        if not self.on_loopback or not header:
            return True
        name = host_name(header).lower()
        if name in self.names or loopback(name) or name.endswith((".localhost", ".local", ".internal")):
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_private or address.is_unspecified

    @web.middleware
    async def middleware(self, request: web.Request, handler) -> web.StreamResponse:
        if not over_tcp(request):
            return await handler(request)
        host = request.headers.get("Host", "")
        if not self.host_allowed(host):
            return web.json_response({"error": f"Host {host[:100]!r} is not this machine: ctxkeepd on a "
                                      "loopback address answers only to localhost (a web page may have "
                                      "rebound its name here)"}, status=403)
        origin = request.headers.get("Origin")
        if origin is None:
            return await handler(request)
        if not self.origin_allowed(origin):
            return web.json_response({"error": f"origin {origin[:100]!r} is not allowed: add it to "
                                      "http_origins in config.toml to let that page use ctxkeepd"}, status=403)
        if request.method == "OPTIONS":  # a preflight
            return web.Response(status=204, headers={**self.cors(origin), "Access-Control-Max-Age": "600"})
        request[CORS_ORIGIN] = origin  # its response says so (on_prepare)
        return await handler(request)

    @staticmethod
    def cors(origin: str) -> dict[str, str]:
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
                "Access-Control-Allow-Headers": ALLOW_HEADERS, "Access-Control-Allow-Methods": ALLOW_METHODS,
                "Access-Control-Expose-Headers": EXPOSE_HEADERS}

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """The CORS headers of an allowed origin's response, streamed ones included (an
        aiohttp `on_response_prepare` signal)."""
        origin = request.get(CORS_ORIGIN)
        if origin:
            response.headers.update(self.cors(origin))
