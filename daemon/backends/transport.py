"""The HTTP transport under every model client: the proxy the environment names for its
server, and one TLS context for the whole daemon (each context loads the system's
certificates, ~30 ms of CPU: a daemon makes a transport per server and a client per
check, and would build one for each)."""

import functools
import ssl
import urllib.request
from urllib.parse import urlsplit

import httpx


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY,
    NO_PROXY, as curl and httpx read them), or None."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every client shares, as httpx makes it by default (the system's
    certificates, or those SSL_CERT_FILE and SSL_CERT_DIR name)."""
    return httpx.create_ssl_context()


def transport_for(url: str) -> httpx.AsyncHTTPTransport:
    """A connection pool for the server at `url`, through the proxy the environment names."""
    return httpx.AsyncHTTPTransport(verify=tls_context(), proxy=proxy_for(url))
