"""The smallest daemon of ctxkeepd's shape, for a baseline: a ROUTER for requests and a PUB
for events, each request's question passed to `ollama.AsyncClient.chat(stream=True)` and
its first piece of text published as an event (its reply, `accepted`, just before). No
context, no protocol types.

    python bench/bare_relay.py OLLAMA_URL CONTROL_ENDPOINT EVENTS_ENDPOINT [STORE_FOLDER]

What ctxkeepd adds over this relay is the daemon's own work; what the relay adds over the
bare ollama client is the two ZeroMQ hops (request in, event out) any such daemon pays.

With STORE_FOLDER it keeps the promise ctxkeepd keeps, the least way it can be kept: each
question is committed (py-lmdb, synced) in a worker thread, started the moment its model
request is out (httpx's `trace` request extension, as ctxkeepd does), and nothing answers
the question before that commit returns. What it adds over the plain relay is what that
promise costs on this machine: the sync, and a second thread that needs a core.
"""

import asyncio
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import lmdb
import ollama
import zmq
import zmq.asyncio


class Traced(httpx.AsyncBaseTransport):
    """Calls `on_sent` once a request's body has been written."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.on_sent: Callable[[], None] = lambda: None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        on_sent = self.on_sent

        async def trace(event: str, info: dict) -> None:
            if event == "http11.send_request_body.complete":
                on_sent()
        request.extensions["trace"] = trace
        return await self.inner.handle_async_request(request)


async def serve(url: str, control: str, events: str, store: str = "") -> None:
    ctx = zmq.asyncio.Context()
    router, pub = ctx.socket(zmq.ROUTER), ctx.socket(zmq.PUB)
    router.bind(control)
    pub.bind(events)
    transport = Traced()
    client = ollama.AsyncClient(host=url, transport=transport) if store else ollama.AsyncClient(host=url)
    env = lmdb.open(store, map_size=1 << 26) if store else None
    writer = ThreadPoolExecutor(1)
    loop = asyncio.get_running_loop()

    def commit(key: bytes, question: bytes) -> None:
        with env.begin(write=True) as txn:  # synced on commit (py-lmdb's default)
            txn.put(key, question)
    print("ready", flush=True)
    asked = 0
    while True:
        peer, frame = await router.recv_multipart()
        ask = json.loads(frame)
        asked += 1
        stored: list[asyncio.Future] = []
        if env is not None:
            transport.on_sent = lambda key=b"%d" % asked: stored.append(
                loop.run_in_executor(writer, commit, key, frame))
        first = True
        async for chunk in await client.chat(ask["model"], ask["messages"], stream=True,
                                             options=ask["options"]):
            if first and chunk.message.content:
                if env is not None:  # the question is stored before anything answers it
                    await stored[0]
                # the reply where ctxkeepd's goes: with the first token at the latest (a
                # reply sent while the request is being built competes with it for a core)
                await router.send_multipart([peer, b'{"accepted":true}'])
                await pub.send_multipart([b"token", chunk.message.content.encode()])
                first = False
        await pub.send_multipart([b"done", b""])


if __name__ == "__main__":
    asyncio.run(serve(*sys.argv[1:5]))
