"""Recall on real conversations: the LongMemEval development split (../shared/bench-data/
longmemeval/, MIT; never copied into this repository), replayed through the real daemon.

Each question's haystack (about 48 chat sessions between a user and an assistant, 115k
tokens, with the evidence sessions among unrelated ones) is imported as one session, each
message with its session's date as its time and each session's first message opening with
that date (as chat front-ends write it); then the question is asked, opening with its own
date. The prompt the stand-in received is searched for the evidence turns (`has_answer`),
verbatim (a turn ctxkeepd recalls in parts, one over 4,000 characters, counts when the part
that holds the question's answer is there: `found`). Same-run baselines at the same token count as each of ctxkeepd's prompts, over
whole turns: the newest turns; half the newest, half the turns BM25 ranks best; BM25 alone;
and half/half again with BM25 on the question's words without its date line (`_STAMP`).
"""

import gzip
import json
import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ollama_standin import OllamaStandin, render

#: ../shared/bench-data/longmemeval beside the checkout (or where CTXKEEP_BENCH_DATA says).
DATA = Path(os.environ.get("CTXKEEP_BENCH_DATA") or Path(__file__).resolve().parents[2] / "shared" / "bench-data") \
    / "longmemeval"
SETS = {"s": "longmemeval_s_dev60.json.gz", "oracle": "longmemeval_oracle_dev440.json.gz"}
MODEL = "qwen2.5:7b"


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    session: int
    evidence: bool
    created: float


@dataclass(frozen=True)
class Question:
    qid: str
    kind: str
    text: str
    turns: list[Turn]
    #: The sessions (their index in `turns`' numbering) that hold the evidence.
    evidence_sessions: frozenset[int]
    #: The answer LongMemEval gives ("2014.", "3", or how a good answer reads).
    answer: str = ""


def epoch(date: str) -> float:
    """'2023/05/30 (Tue) 23:40' as Unix time (UTC)."""
    return time.mktime(time.strptime(date.split(" (")[0] + " " + date.rsplit(" ", 1)[-1], "%Y/%m/%d %H:%M"))


def load(which: str = "s", limit: int = 0) -> list[Question]:
    """The set's questions (abstention questions left out: they have no evidence)."""
    raw = json.load(gzip.open(DATA / SETS[which]))
    out = []
    for item in raw:
        if item["question_id"].endswith("_abs"):
            continue
        turns = []
        for n, (session, date) in enumerate(zip(item["haystack_sessions"], item["haystack_dates"])):
            for i, t in enumerate(session):
                content = f"[{date}] {t['content']}" if i == 0 else t["content"]
                turns.append(Turn(t["role"], content, n, bool(t.get("has_answer")), epoch(date) + i))
        evidence = frozenset(t.session for t in turns if t.evidence)
        if not evidence:
            continue
        out.append(Question(item["question_id"], item["question_type"],
                            f"[{item['question_date']}] {item['question']}", turns, evidence, str(item["answer"])))
    return out[:limit] if limit else out


# -- the baselines, over whole turns, at the same token count ---------------------------------

_WORD = re.compile(r"\w+")
#: The date line `load` writes before a question and each session's first turn. BM25 on the
#: question with it matches the year and month in every session's opening turn — where a
#: history's facts are most often first stated —, so the baselines are reported both ways:
#: with it (as the question is asked) and without (`…_unstamped`: the words of the question alone,
#: as ctxkeepd searches by them).
_STAMP = re.compile(r"^\[\d{4}/\d\d/\d\d \(\w+\) \d\d:\d\d\]\s*")


def bm25_scores(docs: list[str], query: str) -> list[float]:
    """Plain BM25 (no stemming, no stop words: what anyone would write in an afternoon)."""
    counted = [Counter(_WORD.findall(d.lower())) for d in docs]
    n, avg = len(docs), sum(sum(c.values()) for c in counted) / max(1, len(docs))
    df = Counter(w for c in counted for w in c)
    q = set(_WORD.findall(query.lower()))
    out = []
    for c in counted:
        length = sum(c.values())
        out.append(sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * c[w] * 2.2
                       / (c[w] + 1.2 * (0.25 + 0.75 * length / avg)) for w in q if w in c))
    return out


def baselines(q: Question, budget: int, count: Callable[[str], int]) -> dict[str, set[int]]:
    """The turns (indexes) each baseline puts in a prompt of `budget` tokens (the question's
    own cost taken off first)."""
    cost = [count(render([{"role": t.role, "content": t.content}])) for t in q.turns]
    budget -= count(render([{"role": "user", "content": q.text}]))

    def fill(order: list[int], limit: int, taken: set[int]) -> set[int]:
        used = sum(cost[i] for i in taken)
        out = set(taken)
        for i in order:
            if i not in out and used + cost[i] <= limit:
                out.add(i)
                used += cost[i]
        return out

    newest_first = list(range(len(q.turns) - 1, -1, -1))

    def newest(limit: int) -> set[int]:
        used, out = 0, set()
        for i in newest_first:
            if used + cost[i] > limit:
                break
            out.add(i)
            used += cost[i]
        return out
    def by_bm25(question: str) -> list[int]:
        scores = bm25_scores([t.content for t in q.turns], question)
        return sorted(range(len(q.turns)), key=lambda i: -scores[i])
    ranked = by_bm25(q.text)
    return {"newest": newest(budget), "half_newest_half_bm25": fill(ranked, budget, newest(budget // 2)),
            "bm25": fill(ranked, budget, set()),
            "half_newest_half_bm25_unstamped": fill(by_bm25(_STAMP.sub("", q.text)), budget, newest(budget // 2))}


#: The shortest answer searched for in a part of a long turn ("3" would be found anywhere).
ANSWER_CHARS = 4


def answering_parts(content: str, answer: str) -> list[str]:
    """The parts ctxkeepd recalls a turn in (passages.py: one part up to 4,000 characters)
    that hold `answer` (its closing full stop left off); none when the turn is one part, or
    the answer too short to tell."""
    from ctxkeep.daemon.retrieval.passages import WHOLE_CHARS, _pieces
    answer = answer.strip().rstrip(".")
    if len(content.strip()) <= WHOLE_CHARS or len(answer) < ANSWER_CHARS:
        return []
    return [part for part in _pieces(content.strip()) if answer.lower() in part.lower()]


def found(q: Question, prompt: str | set[int]) -> tuple[list[bool], list[bool]]:
    """(each evidence turn in the prompt, each evidence session with any of its evidence
    turns in it): `prompt` is the prompt's text — a turn whole, or a part of it that holds
    the answer (`answering_parts`) —, or a baseline's turn indexes (whole turns)."""
    def has(i: int) -> bool:
        if isinstance(prompt, set):
            return i in prompt
        content = q.turns[i].content.strip()
        return content in prompt or any(part in prompt for part in answering_parts(content, q.answer))
    evidence = [i for i, t in enumerate(q.turns) if t.evidence]
    turns = [has(i) for i in evidence]
    sessions = [any(has(i) for i in evidence if q.turns[i].session == s) for s in sorted(q.evidence_sessions)]
    return turns, sessions


def replay(daemon, standin: OllamaStandin, q: Question, window: int, ask, embedded: bool = False) -> tuple[str, int]:
    """Import the haystack as a session, ask the question; (the prompt's text, its tokens).
    With `embedded`, the question waits until every passage has its vector (as it would
    some minutes after an import)."""
    with daemon.client(timeout=120) as c:
        c.subscribe("")
        sid = c.import_session(name=q.qid, model=MODEL, num_ctx=window, messages=[
            {"role": t.role, "content": t.content, "created": t.created} for t in q.turns]).session.id
        if embedded:
            wait_embedded(c, standin)
        ask(c, sid, q.text)
        chat = [ch for ch in standin.chats if ch.body.get("stream", True)][-1]
        c.delete(sid)
    return "\n".join(m["content"] for m in chat.body["messages"]), chat.prompt_tokens


def wait_embedded(c, standin: OllamaStandin, limit_s: float = 1800) -> None:
    """Until the passages have their vectors: the embedder has started (the stand-in was
    asked, or 5 s went by) and `status` says no passage waits."""
    start = time.monotonic()
    asked = len(standin.embeds)
    while (len(standin.embeds) == asked and time.monotonic() < start + 5)  \
            or "still to embed" in c.status().status.recall:  # (all in the daemon's cache: no asking)
        assert time.monotonic() < start + limit_s, "passages not embedded in time"
        time.sleep(0.5)


def wait_remembered(c, limit_s: float = 600) -> None:
    """Until memory has read every session into its index (`status` says none is still being
    read): a question asked some seconds after its imports, not during them."""
    start = time.monotonic()
    while "more session" in c.status().status.recall:
        assert time.monotonic() < start + limit_s, "sessions not read into memory in time"
        time.sleep(0.2)


# -- tallies, per question type ----------------------------------------------------------------

Rows = dict[str, dict[str, dict[str, list[bool]]]]


def new_rows() -> Rows:
    """kind → method → "turns" / "sessions" → found or not, one per evidence turn or session."""
    from collections import defaultdict
    return defaultdict(lambda: defaultdict(lambda: defaultdict(list)))


def tally(rows: Rows, q: Question, taken: Iterable[tuple[str, "str | set[int]"]]) -> None:
    """Count each method's prompt (or chosen turns) for the question, under its type and "all"."""
    for method, what in taken:
        turns, sessions = found(q, what)
        for kind in (q.kind, "all"):
            rows[kind][method]["turns"] += turns
            rows[kind][method]["sessions"] += sessions


def emit_rows(emit: Callable[..., None], rows: Rows, **fields: object) -> None:
    """One JSON line per question type (then "all"): turn and session percentages by method."""
    pct = lambda hits: round(100 * sum(hits) / len(hits), 1) if hits else None
    for kind in sorted(k for k in rows if k != "all") + ["all"]:
        emit(**fields, kind=kind, n=len(rows[kind]["ctxkeepd"]["turns"]),
             turn_pct={m: pct(v["turns"]) for m, v in rows[kind].items()},
             session_pct={m: pct(v["sessions"]) for m, v in rows[kind].items()})
