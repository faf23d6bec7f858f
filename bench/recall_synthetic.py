"""Recall on our own generated conversations (`bench/recall.py --mode synthetic|pair`): each
replayed turn by turn through the real daemon on the stand-in (its answers the recorded ones,
its summaries of realistic size), then every question sent and its prompt searched for the
messages that hold the answer, beside same-run baselines at the same token count (the newest
turns; half newest, half BM25 with recency).

- synthetic (tests/conversations.py): a user tells an assistant, among everyday chat, facts
  about twelve people they know; questions paraphrase them, ask when, or need two facts.
- pair (tests/two_person.py): two friends write to each other, each line opened with its
  writer's name, and say things about themselves; the questions are asked from outside, in
  the third person, about someone whose name every message holds.
- pair-plain: the same chats without the names opening each line (each writer a role), so a
  name is only where one greets or thanks the other by it.
- with `--elsewhere`: the conversation imported into one session, and each question asked in a
  new one: what memory brings from it (no baseline: a new session holds nothing).

Beside each window's evidence, what recall added is about (`what: recall_precision`): the
tokens of each question's recall block, the questions given a block without their evidence,
and what the everyday requests of tests/unrelated.py (UNRELATED_ASKED of them, each in a
branch of the replayed chat) got from recall and memory.
"""

import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common import emit

import bench_embedders
import conversations
import recall_live
import recall_lme
import two_person
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import ResponseGeneration
from ctxkeep.protocol.imported import ImportedMessage
from harness import DaemonProcess
from ollama_standin import OllamaStandin, render
from unrelated import UNRELATED

MODEL = "qwen2.5:7b"
#: The bench's mode for each kind of conversation (`pair`: "" our synthetic one).
MODES = {"": "synthetic", "labeled": "pair", "plain": "pair-plain"}
#: The everyday requests asked of each replayed chat (a different run of them per seed).
UNRELATED_ASKED = 6


def turn(client, sid: str, text: str) -> object:
    """One turn, and the session idle again after it (its compaction done)."""
    end = client.turn(sid, text)
    client.settle(sid)
    return end


# -- the baselines, over the same turns, at the same token count ------------------------------


def bm25_rank(docs: list[str], query: str) -> list[int]:
    """Indexes of `docs` by plain BM25 for `query`, best first (no stemming: a baseline)."""
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


def everyday(seed: int) -> list[str]:
    """The everyday requests asked of a seed's conversation (UNRELATED_ASKED of tests/unrelated.py)."""
    return [UNRELATED[(seed * UNRELATED_ASKED + k) % len(UNRELATED)] for k in range(UNRELATED_ASKED)]


def generated(seed: int, turns: int, pair: str):
    """The conversation of a seed: a two-person chat (`pair`: "labeled" or "plain") or ours."""
    return two_person.generate(seed, turns or 400, labels=pair == "labeled") if pair \
        else conversations.generate(seed, turns or 500)


@contextmanager
def served(config: str, embed: str, embed_cache: str) -> Iterator[tuple[OllamaStandin, DaemonProcess, object]]:
    """A stand-in answering with a script (recall_live.Scripted: the answers it is told to
    expect, summaries of realistic size) and a daemon with `config` on it, both started, and
    the script; stopped, and the daemon's folder removed, after."""
    standin = OllamaStandin(embedder=bench_embedders.embedder(embed, embed_cache), models=bench_embedders.models(embed))
    model = standin.reply_fn = recall_live.Scripted(count=standin.count)
    standin.start()
    root = Path(tempfile.mkdtemp(prefix="ckrc", dir="/tmp"))
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    daemon.write_config(config)
    try:
        daemon.start()
        yield standin, daemon, model
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)


def run_window(window: int, turns: int, seed: int, config: str = "", embed: str = "none", embed_cache: str = "",
               pair: str = "", alone: bool = False) -> dict[str, dict[str, list[bool]]]:
    """Each question's hits (its evidence messages all in its prompt) per method and kind, over
    one conversation (`pair`: a two-person chat, "labeled" or "plain") replayed through a daemon
    with `config`; the questions asked one after another, or each `alone` (in a branch of the
    conversation as replayed: what one question's recall takes from the active context, the
    next does not find gone)."""
    conversation = generated(seed, turns, pair)
    found: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    with served(config, embed, embed_cache) as (standin, daemon, model):
        for t in conversation.turns:
            model.expect(t.user, t.assistant)
        with daemon.client(timeout=60) as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL, num_ctx=window).session.id
            for t in conversation.turns:
                turn(c, sid, t.user)
            for q in conversation.questions:
                asked = c.request(requests.Branch(session=sid)).session.id if alone else sid
                end = turn(c, asked, q.text)
                chat = [ch for ch in standin.chats if ch.body.get("stream", True)][-1]
                prompt = "\n".join(m["content"] for m in chat.body["messages"])
                if embed != "none":  # as in a chat a person types: the embedder keeps up between turns
                    recall_lme.wait_embedded(c, standin)
                said = q.said or [conversation.turns[i].user for i in q.evidence]
                hit = all(text in prompt for text in said)
                found["ctxkeepd"][q.kind].append(hit)
                block = recall_live.parts(chat.body["messages"], standin.count).get("recall", 0)
                found["recall tokens"][q.kind].append(block)
                last = chat.body["messages"][-1]["content"]
                found["blocks without evidence"][q.kind].append(block > 0 and not any(t in last for t in said))
                spent = chat.prompt_tokens if isinstance(end, ResponseGeneration) else window // 2
                for name, taken in baselines(conversation, q.text, spent, standin.count).items():
                    found[name][q.kind].append(all(i in taken for i in q.evidence))
            for text in everyday(seed):
                turn(c, c.request(requests.Branch(session=sid)).session.id, text)
                got = recall_live.parts(recall_live.last_chat(standin).body["messages"], standin.count)
                found["unrelated added"]["everyday"].append(got.get("recall", 0) + got.get("memory", 0))
        found["ctxkeepd"]["cut or refused prompts"] = [False] * (len(standin.overflowed))
        emit(bench="recall", mode=MODES[pair], window=window, seed=seed, turns=len(conversation.turns),
             summary_calls=model.summary_calls, summary_kinds=dict(model.kinds),
             summary_calls_per_turn=round(model.summary_calls / max(1, len(conversation.turns)), 3))
    return found


def run_elsewhere(window: int, turns: int, seed: int, config: str = "", embed: str = "none", embed_cache: str = "",
                  pair: str = "") -> dict[str, dict[str, list]]:
    """As `run_window`, but the conversation imported into one session and each question (and
    each everyday request) asked in a new session of `window` tokens: what memory brings."""
    conversation = generated(seed, turns, pair)
    found: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    with served(config, embed, embed_cache) as (standin, daemon, _):
        with daemon.client(timeout=120) as c:
            said = [ImportedMessage(role=role, content=text) for t in conversation.turns
                    for role, text in (("user", t.user), ("assistant", t.assistant))]
            c.request(requests.SessionImport(name="chat", model=MODEL, num_ctx=window, messages=said))
            turn(c, c.create_session(model=MODEL, num_ctx=window).session.id, "Hello!")  # memory reads it
            if embed != "none":
                recall_lme.wait_embedded(c, standin)
            asked = [(q.kind, q.text, q.said or [conversation.turns[i].user for i in q.evidence])
                     for q in conversation.questions]
            for kind, text, evidence in asked + [("everyday", text, []) for text in everyday(seed)]:
                turn(c, c.create_session(model=MODEL, num_ctx=window).session.id, text)
                messages = recall_live.last_chat(standin).body["messages"]
                added = recall_live.parts(messages, standin.count).get("memory", 0)
                if kind == "everyday":
                    found["unrelated added"]["everyday"].append(added)
                    continue
                hit = all(t in messages[-1]["content"] for t in evidence)
                found["ctxkeepd"][kind].append(hit)
                found["recall tokens"][kind].append(added)
                found["blocks without evidence"][kind].append(added > 0 and not hit)
        found["ctxkeepd"]["cut or refused prompts"] = [False] * (len(standin.overflowed))
    return found


def run(windows: list[int], seeds: list[int], turns: int, config: str, embed: str, embed_cache: str = "",
        pair: str = "", alone: bool = False, elsewhere: bool = False) -> None:
    """One JSON line per window and question kind: the evidence found by ctxkeepd and each baseline."""
    for window in windows:
        totals: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
        for seed in seeds:
            found = run_elsewhere(window, turns, seed, config, embed, embed_cache, pair) if elsewhere \
                else run_window(window, turns, seed, config, embed, embed_cache, pair, alone)
            for method, kinds in found.items():
                for kind, hits in kinds.items():
                    totals[method][kind] += hits
        bad = len(totals["ctxkeepd"].pop("cut or refused prompts", []))
        fields = dict(bench="recall", mode=MODES[pair], window=window, embed=embed,
                      asked="in new sessions" if elsewhere else "alone" if alone else "in a row")
        emit(**fields, cut_or_refused_prompts=bad)
        emit_precision(totals.pop("recall tokens"), totals.pop("blocks without evidence"),
                       totals.pop("unrelated added")["everyday"], **fields)
        for kind in sorted({k for kinds in totals.values() for k in kinds}) + ["all"]:
            row = {}
            for method, kinds in totals.items():
                hits = [h for v in kinds.values() for h in v] if kind == "all" else kinds[kind]
                row[method] = round(100 * sum(hits) / len(hits), 1) if hits else None
            emit(**fields, kind=kind, n=len(totals["ctxkeepd"][kind]) if kind != "all"
                 else sum(len(v) for v in totals["ctxkeepd"].values()), evidence_pct=row)


def emit_precision(tokens: dict[str, list], missing: dict[str, list], unrelated: list, **fields: object) -> None:
    """What recall added, per question kind and in all: its block's mean tokens, and the
    questions whose block held none of their evidence; and what the everyday requests got."""
    for kind in sorted(tokens) + ["all"]:
        sizes = [t for v in tokens.values() for t in v] if kind == "all" else tokens[kind]
        empty = [m for v in missing.values() for m in v] if kind == "all" else missing[kind]
        emit(**fields, what="recall_precision", kind=kind, recall_tokens_mean=round(sum(sizes) / max(1, len(sizes))),
             blocks_without_evidence=sum(empty), questions=len(sizes))
    emit(**fields, what="recall_precision", kind="everyday requests", unrelated_asked=len(unrelated),
         unrelated_nothing_added_pct=round(100 * sum(1 for u in unrelated if u == 0) / max(1, len(unrelated)), 1),
         unrelated_added_tokens_mean=round(sum(unrelated) / max(1, len(unrelated))))
