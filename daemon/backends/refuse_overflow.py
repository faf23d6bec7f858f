"""An httpx transport that asks Ollama to refuse, not cut, a prompt over the window.

Ollama (0.12+) reads `truncate` on /api/chat: with `false` an overflowing prompt
is answered with an error instead of having its oldest messages dropped. The
`ollama` package's `chat()` has no parameter for it; httpx's transports are its
documented extension point, and `ollama.AsyncClient(**kwargs)` passes them on.
The same transport tells a turn when its chat request is out (see sent.py).
"""

import re

import httpx

from ctxkeep.daemon.backends.sent import current_notes, current_trace

#: Ollama's count of the prompt tokens its cache served, in an answer's last line.
_CACHED = re.compile(rb'"prompt_eval_cached_count"\s*:\s*(\d+)')


class Noting(httpx.AsyncByteStream):
    """An answer's bytes, passed on as they come, with `prompt_eval_cached_count` (which
    the `ollama` package's types drop) written into `notes` when a line carries it."""

    def __init__(self, inner: httpx.AsyncByteStream, notes: dict[str, int]) -> None:
        self.inner, self.notes, self.tail = inner, notes, b""

    async def __aiter__(self):
        async for chunk in self.inner:
            seen = self.tail + chunk
            found = _CACHED.findall(seen)
            if found:
                self.notes["cached"] = int(found[-1])
            self.tail = seen[-64:]
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class RefuseOverflow(httpx.AsyncBaseTransport):
    """Adds `"truncate": false` to the JSON body of each POST /api/chat, then sends it on
    (and notes what its answer says of the prompt cache: `Noting`)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/api/chat"):
            body = await request.aread()
            # The body is the client's JSON object, which has no `truncate`: the field goes in
            # front of its first member, so the prompt is neither parsed nor encoded again.
            if not body.startswith(b"{"):
                raise ValueError("a /api/chat body that is not a JSON object")
            rest = body[1:].lstrip()
            body = b'{"truncate":false' + (b"}" if rest == b"}" else b"," + rest)
            # changed in place: a new httpx.Request parses every header again (~20 µs a turn)
            request.headers["Content-Length"] = str(len(body))
            request.stream = httpx.ByteStream(body)
            request._content = body  # what `request.content` says (aread() set it to the old body)
            request.extensions = current_trace(request.extensions)
        notes = current_notes() if request.url.path.endswith("/api/chat") else None
        response = await self.inner.handle_async_request(request)
        if notes is not None:
            response.stream = Noting(response.stream, notes)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()

