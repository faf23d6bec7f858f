"""Time to first token through ctxkeepd vs the bare ollama client, against the same stand-in.

    python bench/ttft.py [--n 200]

Bare: `ollama.AsyncClient.chat(stream=True)` until the first chunk with text.
Through the daemon: a `send` request until the first `generation.token` event
reaches a subscriber (this includes storing the user message, synced).
Prints JSON lines per target, then the added time at p50 (target: at most 1 ms).
"""

import argparse
import asyncio
import time

import ollama

from common import emit, percentiles, running_daemon
from ctxkeep.protocol.events import GenerationToken, ResponseGeneration

MODEL = "qwen2.5:7b"
MESSAGES = [{"role": "user", "content": "Say something short."}]


async def bare(url: str, n: int, warmup: int) -> list[float]:
    client = ollama.AsyncClient(host=url)
    samples = []
    for i in range(n + warmup):
        t0 = time.perf_counter()
        first = None
        async for chunk in await client.chat(MODEL, MESSAGES, stream=True,
                                             options={"num_ctx": 8192}):
            if first is None and chunk.message.content:
                first = time.perf_counter() - t0
        if i >= warmup:
            samples.append(first)
    await client.close()
    return samples


def through_daemon(daemon, n: int, warmup: int) -> list[float]:
    samples = []
    with daemon.client() as c:
        c.subscribe("")
        for i in range(n + warmup):
            # a fresh session each time, so every prompt is the same size as the bare one
            sid = c.create_session(model=MODEL).session.id
            t0 = time.perf_counter()
            gen = c.send(sid, MESSAGES[0]["content"]).generation_id
            first = None
            while True:
                _, event = c.next_event(timeout=30)
                if getattr(event, "generation_id", None) != gen:
                    continue
                if first is None and isinstance(event, GenerationToken):
                    first = time.perf_counter() - t0
                if isinstance(event, ResponseGeneration):
                    break
            if i >= warmup:
                samples.append(first)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    with running_daemon() as (daemon, standin):
        base = percentiles(asyncio.run(bare(standin.url, args.n, args.warmup)))
        emit(bench="ttft", target="bare_ollama_async_client", **base)
        ours = percentiles(through_daemon(daemon, args.n, args.warmup))
        emit(bench="ttft", target="ctxkeepd_send_to_first_token_event", **ours)
    emit(bench="ttft", target="added", p50_ms=round((ours["p50_us"] - base["p50_us"]) / 1000, 3),
         p99_ms=round((ours["p99_us"] - base["p99_us"]) / 1000, 3), goal_p50_ms="<= 1.0")


if __name__ == "__main__":
    main()
