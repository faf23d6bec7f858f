"""Time to first token through ctxkeepd vs the bare ollama client, against the same stand-in.

    python bench/ttft.py [--n 40] [--rounds 5]

The stand-in runs in a process of its own. Two models: one that answers at once (the
disk's sync is then the floor of what the daemon adds: `accepted` waits for the
question to be stored) and one that takes 20 ms to its first token, as a real model
does (the question's sync then overlaps the model call). Bare: `ollama.AsyncClient.chat
(stream=True)` until the first chunk with text. Through the daemon: a `send` request
until the first `generation.token` event reaches a subscriber. Rounds interleave bare
and daemon samples; each figure is the median over rounds of the rounds' p50. The disk's
floor (a 4-KiB write and fdatasync where the store is) is measured in the same run.
"""

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import ollama

from common import daemon_for, emit, fdatasync_floor, percentiles, standin_process
from ctxkeep.protocol.events import GenerationToken, ResponseGeneration

MODEL = "qwen2.5:7b"
TEXT = "Say something short."


async def bare(client: ollama.AsyncClient, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        first = None
        async for chunk in await client.chat(MODEL, [{"role": "user", "content": TEXT}],
                                             stream=True, options={"num_ctx": 8192}):
            if first is None and chunk.message.content:
                first = time.perf_counter() - t0
        samples.append(first)
    return samples


def through_daemon(c, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        # a fresh session each time, so every prompt is the same size as the bare one
        sid = c.create_session(model=MODEL).session.id
        t0 = time.perf_counter()
        gen = c.send(sid, TEXT).generation_id
        first = None
        while True:
            item = c.next_event(timeout=30)
            assert item is not None, "no event within 30 s"
            event = item[1]
            if getattr(event, "generation_id", None) != gen:
                continue
            if first is None and isinstance(event, GenerationToken):
                first = time.perf_counter() - t0
            if isinstance(event, ResponseGeneration):
                break
        samples.append(first)
    return samples


def measure(first_token_ms: float, n: int, rounds: int) -> None:
    with standin_process(first_token_ms) as url, daemon_for(url) as daemon, daemon.client() as c:
        c.subscribe("")
        loop = asyncio.new_event_loop()
        client = ollama.AsyncClient(host=url)
        loop.run_until_complete(bare(client, 10))  # warm-up, both
        through_daemon(c, 10)
        bare_p50, ours_p50, bare_all, ours_all = [], [], [], []
        for _ in range(rounds):
            b = loop.run_until_complete(bare(client, n))
            o = through_daemon(c, n)
            bare_p50.append(statistics.median(b))
            ours_p50.append(statistics.median(o))
            bare_all += b
            ours_all += o
        loop.run_until_complete(client.close())
        loop.close()
        floor = fdatasync_floor(Path(daemon.root))
    model = f"first_token_{first_token_ms:g}ms"
    emit(bench="ttft", model=model, target="bare_ollama_async_client", **percentiles(bare_all))
    emit(bench="ttft", model=model, target="ctxkeepd_send_to_first_token_event", **percentiles(ours_all))
    added = statistics.median(o - b for o, b in zip(ours_p50, bare_p50)) * 1000
    emit(bench="ttft", model=model, target="added", p50_ms=round(added, 3),
         per_round_ms=[round((o - b) * 1000, 2) for o, b in zip(ours_p50, bare_p50)],
         disk_fdatasync_p50_ms=round(floor["p50_us"] / 1000, 3),
         above_floor_ms=round(added - floor["p50_us"] / 1000, 3),
         goal="added <= 1 ms" if first_token_ms else "added - disk floor <= 1 ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="samples per target per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for first_token_ms in (0.0, 20.0):
        measure(first_token_ms, args.n, args.rounds)


if __name__ == "__main__":
    main()
