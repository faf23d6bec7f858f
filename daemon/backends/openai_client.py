"""The official `openai` client for one OpenAI-compatible server, made the way the daemon
needs it: no retries of its own (the daemon fails over and retries itself), an explicit
connect timeout, the environment's proxy for this host only, and an httpx transport that
tells a turn when its chat request is out (see sent.py)."""

from typing import Any, cast

import httpx

from ctxkeep.daemon.backends.sent import current_trace
from ctxkeep.daemon.backends.transport import transport_for


class TraceSent(httpx.AsyncBaseTransport):
    """Gives each chat request the awaiting turn's `on_sent` trace, then sends it on."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/chat/completions"):
            request.extensions = current_trace(request.extensions)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def api_base(url: str) -> str:
    """The base URL the client takes: the server's, ending in /v1 (added when the
    configured URL names only the server)."""
    url = url.rstrip("/")
    return url if url.rsplit("/", 1)[-1].startswith("v1") or url.count("/") > 2 else f"{url}/v1"


def server_root(url: str) -> str:
    """The server's own address (where llama.cpp's /props and LM Studio's /api/v0 are)."""
    base = api_base(url)
    return base[: -len("/v1")] if base.endswith("/v1") else base


def make_client(url: str, key: str, connect_timeout: float, read_timeout: float) -> Any:
    """An `openai.AsyncOpenAI` for the server at `url` (imports openai)."""
    import openai
    timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
    http = httpx.AsyncClient(transport=TraceSent(transport_for(url)),
                             timeout=timeout, trust_env=False)
    # openai types these as its httpx2's; it takes httpx's as well (its "legacy" client), and
    # ollama's client and the transports here are httpx's
    return openai.AsyncOpenAI(base_url=api_base(url), api_key=key or "none", max_retries=0,
                              timeout=cast(Any, timeout), http_client=cast(Any, http))
