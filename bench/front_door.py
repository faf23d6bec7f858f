"""The HTTP front door against a direct client of the same stand-in, in the same run.

    python bench/front_door.py [--turns 40] [--concurrent 50]

- time to first token: the `ollama` library streaming the same chat from the stand-in
  directly and through ctxkeepd's front door (TCP on loopback), in a new random order each
  turn; both resend the whole growing conversation each turn, as stateless clients do, so
  matching it to its session is on the front door's path. A third target names its session
  (X-Ctxkeep-Session) and sends the new message alone: the front door without matching.
  A fourth, the floor: bench/bare_http_relay.py, the smallest front door of the same shape
  (aiohttp and the official client behind it, nothing else). The stand-in answers after
  20 ms, then a token every 10 ms. Goal: front door ≤ direct + 2 ms at p50. With
  `--starlette` (Starlette and uvicorn installed), the same relay on them too: how the
  server library was chosen.
- matching: a 400-message conversation resent: hashing its prefix and finding its session
  (ConversationIndex.find, in-process over a store holding it). Goal: ≤ 5 ms.
- concurrency: that many chats at once through the front door. Goal: 0 errors.
"""

import argparse
import random
import shutil
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from common import (  # (puts tests/ on the path)
    bare_http_relay,
    daemon_for,
    emit,
    free_port,
    percentiles,
    standin_process,
)

import ollama

from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.transports.http.conversations import ConversationIndex

MODEL = "qwen2.5:7b"


def first_token(client: ollama.Client, messages: list[dict]) -> tuple[float, str]:
    """Seconds to the first chunk with text, and the whole answer."""
    t0 = time.perf_counter()
    first, text = 0.0, []
    for chunk in client.chat(model=MODEL, messages=messages, stream=True):
        if chunk.message.content and not first:
            first = time.perf_counter() - t0
        text.append(chunk.message.content)
    return first, "".join(text)


def ttft(url: str, door: str, relays: dict[str, str], turns: int) -> None:
    clients = {"direct": ollama.Client(host=url),
               **{name: ollama.Client(host=relay) for name, relay in relays.items()},
               "front_door": ollama.Client(host=door),
               "front_door_named": ollama.Client(host=door, headers={"X-Ctxkeep-Session": "named"})}
    conversation: list[dict] = []
    samples: dict[str, list[float]] = {target: [] for target in clients}
    order = random.Random(7)
    for turn in range(turns):
        question = {"role": "user", "content": f"Question {turn}: what about the weather {turn}?"}
        answer = ""
        for target in order.sample(list(clients), len(clients)):
            messages = [question] if target == "front_door_named" else conversation + [question]
            took, text = first_token(clients[target], messages)
            samples[target].append(took)
            answer = text if target == "front_door" else answer
            time.sleep(0.02)  # the daemon's work after an answer is not the next sample's
        conversation += [question, {"role": "assistant", "content": answer}]
    for target, values in samples.items():
        emit(bench="front_door", figure="ttft", target=target, **percentiles(values))
    direct = percentiles(samples["direct"])["p50_us"]
    for target in ("front_door", "front_door_named"):
        added = (percentiles(samples[target])["p50_us"] - direct) / 1000
        emit(bench="front_door", figure="ttft", target=f"{target} - direct", p50_ms=round(added, 2),
             goal="<= 2 ms")
    if "relay_starlette" in samples:
        emit(bench="front_door", figure="ttft", target="relay_starlette - relay", p50_ms=round(
            (percentiles(samples["relay_starlette"])["p50_us"] - percentiles(samples["relay"])["p50_us"])
            / 1000, 2))
    floor = (percentiles(samples["relay"])["p50_us"] - direct) / 1000
    above = (percentiles(samples["front_door"])["p50_us"] - percentiles(samples["relay"])["p50_us"]) / 1000
    emit(bench="front_door", figure="ttft", target="relay - direct (the floor)", p50_ms=round(floor, 2))
    emit(bench="front_door", figure="ttft", target="front_door - relay", p50_ms=round(above, 2))


def matching(n: int = 400, rounds: int = 200) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ckm", dir="/tmp"))
    try:
        store = Store.open(folder / "store")
        session = store.sessions.create(name="long", model=MODEL, system="", options={}, num_ctx=8192)
        store.history.append(session.id, [NewMessage(role="user" if i % 2 == 0 else "assistant",
                                                     content=f"message {i} " + "words " * 40)
                                          for i in range(n)])
        index = ConversationIndex(store)
        index.refresh()
        conversation = [(m.role, m.content) for m in store.history.page(session.id, 0, n)[0]]
        samples = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            match = index.find("", conversation)
            samples.append(time.perf_counter() - t0)
        assert match.continues and match.session == session.id
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    emit(bench="front_door", figure="matching", messages=n, **percentiles(samples), goal="<= 5 ms")


def concurrent(door: str, n: int) -> None:
    errors: list[str] = []

    def chat(i: int) -> None:
        try:
            ollama.Client(host=door).chat(model=MODEL, messages=[{"role": "user", "content": f"chat {i}"}])
        except Exception as exc:  # counted
            errors.append(repr(exc))
    t0 = time.perf_counter()
    threads = [threading.Thread(target=chat, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    emit(bench="front_door", figure="concurrent", chats=n, errors=len(errors),
         seconds=round(time.perf_counter() - t0, 2), first_error=errors[0] if errors else "", goal="0 errors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--starlette", action="store_true",
                        help="also a relay on Starlette and uvicorn (installed apart)")
    args = parser.parse_args()
    matching()
    port = free_port()
    with standin_process(first_token_ms=20, token_ms=10) as url, daemon_for(url, config=(
            f'http_listen = "127.0.0.1:{port}"\nhttp_auth = "none"\n')), ExitStack() as stack:
        relays = {"relay": stack.enter_context(bare_http_relay(url))}
        if args.starlette:
            relays["relay_starlette"] = stack.enter_context(bare_http_relay(url, "starlette"))
        door = f"http://127.0.0.1:{port}"
        ttft(url, door, relays, args.turns)
        concurrent(door, args.concurrent)


if __name__ == "__main__":
    main()
