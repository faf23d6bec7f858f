"""An httpx transport that asks Ollama to refuse, not cut, a prompt over the window.

Ollama (0.12+) reads `truncate` on /api/chat: with `false` an overflowing prompt
is answered with an error instead of having its oldest messages dropped. The
`ollama` package's `chat()` has no parameter for it; httpx's transports are its
documented extension point, and `ollama.AsyncClient(**kwargs)` passes them on.
"""

import json

import httpx


class RefuseOverflow(httpx.AsyncBaseTransport):
    """Adds `"truncate": false` to the JSON body of each POST /api/chat, then sends it on."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/api/chat"):
            body = json.loads(await request.aread())
            body["truncate"] = False
            headers = [(k, v) for k, v in request.headers.multi_items()
                       if k.lower() != "content-length"]
            request = httpx.Request("POST", request.url, headers=headers, json=body,
                                    extensions=request.extensions)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
