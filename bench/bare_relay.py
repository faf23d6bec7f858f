"""The smallest daemon of ctxkeepd's shape, for a baseline: a ROUTER for requests and a PUB
for events, each request's question passed to `ollama.AsyncClient.chat(stream=True)` and
its first piece of text published as an event. No store, no context, no protocol types.

    python bench/bare_relay.py OLLAMA_URL CONTROL_ENDPOINT EVENTS_ENDPOINT

What ctxkeepd adds over this relay is the daemon's own work; what the relay adds over the
bare ollama client is the two ZeroMQ hops (request in, event out) any such daemon pays.
"""

import asyncio
import json
import sys

import ollama
import zmq
import zmq.asyncio


async def serve(url: str, control: str, events: str) -> None:
    ctx = zmq.asyncio.Context()
    router, pub = ctx.socket(zmq.ROUTER), ctx.socket(zmq.PUB)
    router.bind(control)
    pub.bind(events)
    client = ollama.AsyncClient(host=url)
    print("ready", flush=True)
    while True:
        peer, frame = await router.recv_multipart()
        ask = json.loads(frame)
        await router.send_multipart([peer, b'{"accepted":true}'])
        first = True
        async for chunk in await client.chat(ask["model"], ask["messages"], stream=True,
                                             options=ask["options"]):
            if first and chunk.message.content:
                await pub.send_multipart([b"token", chunk.message.content.encode()])
                first = False
        await pub.send_multipart([b"done", b""])


if __name__ == "__main__":
    asyncio.run(serve(*sys.argv[1:4]))
