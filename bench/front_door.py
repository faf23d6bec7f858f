"""The HTTP front door against a direct client of the same stand-in, in the same run.

    python bench/front_door.py [--turns 40] [--concurrent 50]

- time to first token: the `ollama` library streaming a chat from the stand-in directly,
  and through ctxkeepd's front door (TCP on loopback), interleaved; the front-door client
  resends its whole growing conversation each turn, as stateless clients do, so matching
  it to its session is on the path. The stand-in answers after 20 ms, then a token every
  10 ms. Goal: front door ≤ direct + 2 ms at p50.
- matching: a 400-message conversation resent: hashing its prefix and finding its session
  (ConversationIndex.find, in-process over a store holding it). Goal: ≤ 5 ms.
- concurrency: that many chats at once through the front door. Goal: 0 errors.
"""

import argparse
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import ollama

from common import daemon_for, emit, percentiles, standin_process  # (puts tests/ on the path)
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


def ttft(url: str, door: str, turns: int) -> None:
    direct, front = ollama.Client(host=url), ollama.Client(host=door)
    conversation: list[dict] = []
    samples: dict[str, list[float]] = {"direct": [], "front_door": []}
    for turn in range(turns):
        question = {"role": "user", "content": f"Question {turn}: what about the weather {turn}?"}
        samples["direct"].append(first_token(direct, [question])[0])
        took, answer = first_token(front, conversation + [question])
        samples["front_door"].append(took)
        conversation += [question, {"role": "assistant", "content": answer}]
    for target, values in samples.items():
        emit(bench="front_door", figure="ttft", target=target, **percentiles(values))
    added = (percentiles(samples["front_door"])["p50_us"] - percentiles(samples["direct"])["p50_us"]) / 1000
    emit(bench="front_door", figure="ttft", target="added", p50_ms=round(added, 2), goal="<= 2 ms")


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
        except Exception as exc:  # noqa: BLE001 - counted
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
    args = parser.parse_args()
    matching()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with standin_process(first_token_ms=20, token_ms=10) as url, daemon_for(url, config=(
            f'http_listen = "127.0.0.1:{port}"\nhttp_auth = "none"\n')):
        door = f"http://127.0.0.1:{port}"
        ttft(url, door, args.turns)
        concurrent(door, args.concurrent)


if __name__ == "__main__":
    main()
