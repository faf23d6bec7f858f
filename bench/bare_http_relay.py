"""The smallest HTTP front door of ctxkeepd's shape, for a baseline: aiohttp on loopback
TCP, each POST /api/chat passed to `ollama.AsyncClient.chat(stream=True)` and its chunks
written back as Ollama's NDJSON, the first one with the response's headers. No session,
no store, no matching.

    python bench/bare_http_relay.py OLLAMA_URL PORT [aiohttp|starlette]

The same relay on Starlette and uvicorn (`pip install starlette uvicorn`; not a dependency
of ctxkeep) is how bench/front_door.py weighs the two server libraries against each other.
What the front door adds over this relay is ctxkeepd's own work; what the relay adds over
a client of Ollama itself is the second HTTP hop (a server, and the official client again
behind it) any such front door pays.
"""

import sys

import ollama
from aiohttp import web


def app(url: str) -> web.Application:
    client = ollama.AsyncClient(host=url)

    async def chat(request: web.Request) -> web.StreamResponse:
        ask = await request.json()
        stream = await client.chat(ask["model"], ask["messages"], stream=True,
                                   options=ask.get("options"))
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        async for chunk in stream:
            if not response.prepared:
                await response.prepare(request)
            await response.write(chunk.model_dump_json().encode() + b"\n")
        await response.write_eof()
        return response

    application = web.Application()
    application.router.add_post("/api/chat", chat)
    return application


def starlette_app(url: str):  # starlette is optional
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route
    client = ollama.AsyncClient(host=url)

    async def chat(request):
        ask = await request.json()
        stream = await client.chat(ask["model"], ask["messages"], stream=True,
                                   options=ask.get("options"))

        async def lines():
            async for chunk in stream:
                yield chunk.model_dump_json().encode() + b"\n"
        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


def main() -> None:
    url, port = sys.argv[1], int(sys.argv[2])
    if sys.argv[3:] == ["starlette"]:
        import uvicorn
        server = uvicorn.Server(uvicorn.Config(starlette_app(url), host="127.0.0.1", port=port,
                                               access_log=False, log_level="warning"))
        print("ready", flush=True)  # uvicorn binds before it serves the first request
        server.run()
        return
    web.run_app(app(url), host="127.0.0.1", port=port, access_log=None,
                print=lambda *_: print("ready", flush=True))


if __name__ == "__main__":
    main()
