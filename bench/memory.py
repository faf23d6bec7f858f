"""Memory across sessions: a question asked in a new chat, its evidence said in others.

    python bench/memory.py [--windows 4096,8192] [--limit N] [--kinds K,...] [--timing 1000x100]

For each question of LongMemEval's development split (../shared/bench-data/longmemeval/,
MIT; never copied here), every one of its ~48 haystack sessions is imported through the real
daemon (on the stand-in) as a session of its own, each message with its session's date as
its time; then, once memory has read them (`status`), the question is asked in a new
session, after a greeting, and the prompt the stand-in received
is searched for the evidence turns, verbatim. The sessions are deleted before the next
question (so deleting is exercised too). Same-run baselines over whole turns of all the
question's sessions at a fixed budget, the window less the reply room: BM25; the newest
turns overall; half each; and no memory (0 %). Goals (issue 43): turns ≥ 85 % at 4,096 and
≥ 90 % at 8,192, at least the baseline in every question type.

`--timing 1000x100`: memory's time per turn (ranking and choosing, in-process over the real
store) with 1,000 sessions of 100 messages stored; goal p50 ≤ 25 ms.
"""

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from common import emit

import recall_lme
from harness import DaemonProcess
from ollama_standin import OllamaStandin
from recall import turn

MODEL = "qwen2.5:7b"


def undated(q: recall_lme.Question) -> recall_lme.Question:
    """The question with each session's first message as it was said (the date is the
    message's time here, not a prefix of its text)."""
    turns = [replace(t, content=t.content.split("] ", 1)[1]) if i == 0 or q.turns[i - 1].session != t.session
             else t for i, t in enumerate(q.turns)]
    return replace(q, turns=turns)


def ask(daemon: DaemonProcess, standin: OllamaStandin, q: recall_lme.Question, window: int) -> tuple[str, int]:
    """Import the question's sessions, ask it in a new one; the prompt's text and tokens."""
    with daemon.client(timeout=120) as c:
        c.subscribe("")
        made = []
        for n in sorted({t.session for t in q.turns}):
            made.append(c.import_session(name=f"{q.qid}-{n}", model=MODEL, num_ctx=window, messages=[
                {"role": t.role, "content": t.content, "created": t.created} for t in q.turns if t.session == n
            ]).session.id)
        asker = c.create_session(name=f"{q.qid}-ask", model=MODEL, num_ctx=window).session.id
        turn(c, asker, "Hello!")  # memory catches up with the imports (in a worker thread)
        recall_lme.wait_remembered(c)  # asked some seconds after the imports, not during them
        turn(c, asker, q.text)
        chat = [ch for ch in standin.chats if ch.body.get("stream", True)][-1]
        for sid in [*made, asker]:
            c.delete(sid)
    return "\n".join(m["content"] for m in chat.body["messages"]), chat.prompt_tokens


def run(windows: list[int], limit: int, kinds: str, config: str) -> None:
    questions = [undated(q) for q in recall_lme.load("s", limit) if not kinds or q.kind in kinds.split(",")]
    for window in windows:
        standin = OllamaStandin().start()
        root = Path(tempfile.mkdtemp(prefix="ckmem", dir="/tmp"))
        daemon = DaemonProcess(root, standin.url, log_level="warning")
        daemon.write_config(config)
        rows = recall_lme.new_rows()
        budget = window - min(1024, window // 8)
        tokens: list[int] = []
        try:
            daemon.start()
            for q in questions:
                prompt, spent = ask(daemon, standin, q, window)
                tokens.append(spent)
                recall_lme.tally(rows, q, [("ctxkeepd", prompt), ("no_memory", set()),
                                           *recall_lme.baselines(q, budget, standin.count).items()])
            cut = len(standin.overflowed)
        finally:
            daemon.stop()
            standin.stop()
            shutil.rmtree(root, ignore_errors=True)
        emit(bench="memory", window=window, questions=len(questions), baseline_budget=budget,
             prompt_tokens_mean=round(statistics.fmean(tokens)) if tokens else 0, cut_or_refused_prompts=cut)
        recall_lme.emit_rows(emit, rows, bench="memory", window=window)


def time_memory(sessions: int, messages: int, turns_timed: int = 40) -> dict[str, float]:
    """Memory's own time per turn over `sessions` × `messages` stored, index built."""
    import conversations
    from ctxkeep.daemon.config import Config
    from ctxkeep.daemon.memory.bringing import bring
    from ctxkeep.daemon.memory.query import Query
    from ctxkeep.daemon.retrieval.lexical import query_terms
    from ctxkeep.daemon.store.records import NewMessage
    from ctxkeep.protocol import requests
    from inprocess import InProcess
    from memory_backend import MemoryBackend
    root = Path(tempfile.mkdtemp(prefix="ckmt", dir="/tmp"))
    app = InProcess(root, MemoryBackend(), Config(embed_model=""))
    conversation = conversations.generate(11, sessions * messages // 2)
    said = [m for t in conversation.turns for m in (t.user, t.assistant)]
    try:
        async def go() -> list[float]:
            for s in range(sessions):
                sid = (await app.call(requests.SessionCreate(model=MODEL, name=f"s{s}"))).session.id
                app.store.history.append(sid, [NewMessage(role="user" if i % 2 == 0 else "assistant", content=text)
                                               for i, text in enumerate(said[s * messages:(s + 1) * messages])])
            asker = (await app.call(requests.SessionCreate(model=MODEL, name="asker"))).session
            memory = app.services.memory
            assert memory is not None and await memory.built(600)
            rng = random.Random(1)
            asked = [q.text for q in conversation.questions] + said[:200]
            samples = []
            estimate = app.services.estimator.estimate
            for _ in range(turns_timed):
                text = rng.choice(asked)
                start = time.perf_counter()
                await bring(memory, asker, Query(query_terms(text)), 2000, 20,  # (its passages, why fewer)
                            lambda pid, name: estimate(MODEL, memory.index.lines[pid]))
                samples.append(time.perf_counter() - start)
            return samples
        samples = sorted(asyncio.run(go()))
    finally:
        app.close()
        shutil.rmtree(root, ignore_errors=True)
    return {"p50_ms": round(1000 * statistics.median(samples), 2),
            "p95_ms": round(1000 * samples[int(0.95 * (len(samples) - 1))], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="4096,8192")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions")
    parser.add_argument("--kinds", default="", help="only these question types (comma-separated)")
    parser.add_argument("--timing", default="1000x100", help="SESSIONSxMESSAGES to time memory at ('' skips)")
    parser.add_argument("--config", action="append", default=[], metavar="LINE",
                        help="a config.toml line for the daemon (repeatable)")
    args = parser.parse_args()
    config = 'embed_model = ""\n' + "".join(f"{line}\n" for line in args.config)
    run([int(w) for w in filter(None, args.windows.split(","))], args.limit, args.kinds, config)
    if args.timing:
        sessions, messages = map(int, args.timing.split("x"))
        emit(bench="memory_time", sessions=sessions, messages=sessions * messages,
             **time_memory(sessions, messages))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    main()
