"""Recall inside a live session: each LongMemEval development question's history sent to
ctxkeepd message by message, as a user would, then the question.

The stand-in answers each message with the history's own recorded answer, and every
summarization call (a checkpoint, an aging, a merge) with a summary of realistic size —
about a quarter of what it is given, never more than the call's `num_predict`, made of the
source's own sentences spread evenly through it — so checkpoints take the room real ones
take, and compaction and recall run as they do for a user. A session of the history that
opens with the assistant's words is opened by its date line as the user's message.

For the question's prompt it reports where the tokens went (system prompt, checkpoints,
verbatim turns, recall, memory) and which evidence turns are in it verbatim, beside
baselines over whole turns at the same token count (bench/recall_lme.py) — the turns as the
session stored them: a recorded answer longer than the turn's room was cut at its length
limit, as a model's answer would be, and what was said is that start (`as_said`).
"""

import math
import re
import statistics
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import recall_lme
from ctxkeep.clients import Client
from ctxkeep.daemon.compaction.prompts import (
    AGE_SYSTEM,
    CHECKPOINT_SYSTEM,
    CHECKPOINT_WITH_USER_SYSTEM,
    COMPACTION_SYSTEM,
    MERGE_SYSTEM,
    USER_SUMMARY_SYSTEM,
)
from ctxkeep.daemon.memory.block import OPENING as MEMORY_OPENING
from ctxkeep.daemon.retrieval.select import CLOSING
from ctxkeep.daemon.retrieval.select import OPENING as RECALL_OPENING
from ctxkeep.protocol.events import GenerationRecalled, ResponseGeneration
from ctxkeep.protocol.structs import RecalledPassage

SUMMARY_SYSTEMS = (COMPACTION_SYSTEM, MERGE_SYSTEM, CHECKPOINT_SYSTEM, USER_SUMMARY_SYSTEM,
                   CHECKPOINT_WITH_USER_SYSTEM, AGE_SYSTEM)
CHECKPOINTS = "Summary of the earlier conversation"
#: The share of its source a stand-in summary takes.
SUMMARY_SHARE = 0.25
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


SUMMARY_KINDS = dict(zip(SUMMARY_SYSTEMS, ("manual", "merge", "checkpoint", "user_share", "checkpoint_with_user",
                                           "aging")))


def summary_kind(messages: list[dict[str, Any]]) -> str:
    """Which summary a chat asks for ("" for none): its instructions are one of the
    summarizers' (as the system message of a call of its own, or in the request of one that
    goes on from the last turn's prompt)."""
    last = messages[-1].get("content", "") if messages else ""
    first = messages[0].get("content", "") if messages and messages[0].get("role") == "system" else ""
    return next((kind for s, kind in SUMMARY_KINDS.items() if s in last or (len(messages) == 2 and first.startswith(s))),
                "")


def is_summary_call(messages: list[dict[str, Any]]) -> bool:
    return bool(summary_kind(messages))


def summary_source(messages: list[dict[str, Any]]) -> str:
    """What a summary call summarizes: the text after the request's header; for a call
    that goes on from the last turn's prompt ("the conversation above"), the messages before
    the request (the checkpoints of the system message, for an aging)."""
    request = messages[-1]["content"]
    body = request.split("\n\n", 1)[1] if "\n\n" in request else request
    body = next((body.split(s)[0] for s in SUMMARY_SYSTEMS if s in body), body).strip()
    if "conversation above" not in body:
        return body
    earlier = messages[:-1]
    if request.startswith("Summary to shorten"):
        return "\n".join(m["content"].split(CHECKPOINTS, 1)[-1] for m in earlier if m["role"] == "system")
    return "\n".join(m["content"] for m in earlier if m["role"] != "system")


def summarize(source: str, tokens: int, count: Callable[[str], int]) -> str:
    """About `tokens` tokens of `source`'s sentences, spread evenly through it, in order."""
    sentences = [s for s in (p.strip() for p in _SENTENCE.split(source)) if s]
    if not sentences:
        return "Summary: nothing to keep."
    costs = [count(s) + 1 for s in sentences]
    share = min(1.0, tokens / max(1, sum(costs)))
    picked, owed = [], 0.0
    for s, cost in zip(sentences, costs):
        owed += cost * share
        if owed >= cost:
            picked.append(s)
            owed -= cost
    return " ".join(picked or sentences[:1])


@dataclass
class Scripted:
    """The stand-in's model: the history's own answers, summaries of realistic size."""

    count: Callable[[str], int]
    answers: dict[str, deque[str]] = field(default_factory=dict)
    summary_calls: int = 0
    #: The summary calls by kind (checkpoint, aging, merge, …).
    kinds: Counter[str] = field(default_factory=Counter)

    def expect(self, user: str, answer: str) -> None:
        self.answers.setdefault(user, deque()).append(answer)

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        """The reply to a chat (the stand-in cuts it at the call's num_predict)."""
        kind = summary_kind(messages)
        if kind:
            self.summary_calls += 1
            self.kinds[kind] += 1
            source = summary_source(messages)
            return summarize(source, max(16, math.ceil(self.count(source) * SUMMARY_SHARE)), self.count)
        said = messages[-1].get("content", "").split(f"\n\n{RECALL_OPENING}")[0].split(f"\n\n{MEMORY_OPENING}")[0]
        queue = self.answers.get(said)
        return queue.popleft() if queue else "I see."


@dataclass(frozen=True)
class Step:
    """One message the user sends, and the answer the history recorded for it."""

    text: str
    answer: str


def steps(q: recall_lme.Question) -> list[Step]:
    """The history as the messages a user sends: each user turn with the answer after it; an
    assistant turn with no user turn before it (a session the assistant opens) answers the
    session's date line, sent as the user's message."""
    out: list[Step] = []
    pending: str | None = None
    for t in q.turns:
        date = t.content[:t.content.index("]") + 1] if t.content.startswith("[") else "(go on)"
        if t.role == "user":
            if pending is not None:
                out.append(Step(pending, ""))
            pending = t.content
        else:
            out.append(Step(pending if pending is not None else date, t.content))
            pending = None
    if pending is not None:
        out.append(Step(pending, ""))
    return out


def parts(messages: list[dict[str, Any]], count: Callable[[str], int]) -> dict[str, int]:
    """Where a prompt's tokens went: the system prompt (and goals), the checkpoints, the
    verbatim turns, recall's block, memory's block (each part's text counted alone)."""
    out = Counter[str]()
    for i, m in enumerate(messages):
        text = m.get("content", "") or ""
        if m["role"] == "system":
            head, _, checkpoints = text.partition(CHECKPOINTS)
            out["system"] += count(head)
            out["checkpoints"] += count(_ + checkpoints) if checkpoints else 0
            continue
        if i == len(messages) - 1:
            for opening, name in ((MEMORY_OPENING, "memory"), (RECALL_OPENING, "recall")):
                if opening in text:
                    before, block = text.split(f"\n\n{opening}", 1) if f"\n\n{opening}" in text else text.split(opening, 1)
                    block_text, _, after = block.partition(CLOSING)
                    out[name] += count(opening + block_text + CLOSING)
                    text = before + after
            out["question"] += count(text)
            continue
        out["verbatim"] += count(text)
    return dict(out)


@dataclass
class Replayed:
    """One question replayed: its prompt's text, tokens and parts, and the replay's counts."""

    prompt: str
    tokens: int
    parts: dict[str, int]
    turns: int
    summary_calls: int
    #: The turns that got no answer, by error code (a message larger than the window...).
    errors: Counter[str]
    seconds: float
    #: Whether the question's recall ranked by meaning (its vector came in time).
    by_meaning: bool = False
    #: The question with its history as the session stored it (`as_said`).
    said: recall_lme.Question | None = None
    #: What recall put into the question's prompt.
    recalled: list[RecalledPassage] = field(default_factory=list)
    #: The tokens recall and memory added to a request the history is not about, asked
    #: after the question in the same session (None: none asked).
    unrelated_added: int | None = None
    #: That request's prompt, as the model got it.
    unrelated_prompt: str = ""


def replay(c: Client, standin: Any, model: Scripted, q: recall_lme.Question, window: int,
           model_name: str, embedded: bool = False, unrelated: str = "") -> Replayed:
    """The question's history sent message by message to a new session, then the question
    (with `embedded`, once every passage has its vector), then `unrelated` (a request the
    history is not about: what recall and memory add to it)."""
    start = time.monotonic()
    sid = c.create_session(name=f"live-{q.qid}", model=model_name, num_ctx=window).session.id
    plan = steps(q)
    for s in plan:
        model.expect(s.text, s.answer)
    calls_before, errors = model.summary_calls, Counter[str]()
    for s in plan:
        end = c.turn(sid, s.text)
        if not isinstance(end, ResponseGeneration):
            errors[end.code] += 1
            if end.code != "context_overflow":  # (a pasted document larger than the window: said, expected)
                print(f"{q.qid}: a replayed turn failed: {end.code}: {getattr(end, 'message', '')}", file=sys.stderr)
        c.settle(sid)
    calls = model.summary_calls - calls_before
    said = as_said(q, stored_answers(c, sid))
    if embedded:
        recall_lme.wait_embedded(c, standin)
    recalled: list[GenerationRecalled] = []
    c.turn(sid, q.text, on_event=lambda e: recalled.append(e) if isinstance(e, GenerationRecalled) else None)
    chat = last_chat(standin)
    messages = chat.body["messages"]
    c.settle(sid)
    added, asked = None, ""
    if unrelated:
        c.turn(sid, unrelated)
        after = last_chat(standin).body["messages"]
        got = parts(after, standin.count)
        added, asked = got.get("recall", 0) + got.get("memory", 0), "\n".join(m["content"] for m in after)
        c.settle(sid)
    c.delete(sid)
    model.answers.clear()
    return Replayed("\n".join(m["content"] for m in messages), chat.prompt_tokens, parts(messages, standin.count),
                    len(plan), calls, errors, time.monotonic() - start, any(e.by_meaning for e in recalled), said,
                    [p for e in recalled for p in e.recalled], added, asked)


def last_chat(standin: Any) -> Any:
    """The last request for an answer the stand-in got (not a summary's, not a count's)."""
    return [ch for ch in standin.chats if ch.body.get("stream", True) and not is_summary_call(ch.body["messages"])][-1]


def from_evidence(q: recall_lme.Question, recalled: list[RecalledPassage], count: Callable[[str], int]) -> tuple[int, int]:
    """(tokens of the session's own passages recall added, those of them from the question's
    evidence sessions): what the added tokens are about."""
    sessions = {}
    for t in q.turns:
        sessions.setdefault(t.content.strip(), t.session)
    total = ours = 0
    for p in recalled:
        if p.session_id:
            continue  # memory's, from another session
        tokens = count(p.text)
        total += tokens
        text = p.text.strip()
        owner = sessions.get(text)
        if owner is None:  # a part of a longer message
            owner = next((t.session for t in q.turns if text in t.content), None)
        ours += tokens if owner in q.evidence_sessions else 0
    return total, ours


def stored_answers(c: Client, sid: str) -> list[str]:
    """The answers the session stored, oldest first."""
    out: list[str] = []
    start: int | None = 0
    while start is not None:
        page = c.history(sid, start=start, limit=500)
        out += [m.content for m in page.messages if m.role == "assistant" and m.kind == "message"]
        start = page.next
    return out


def as_said(q: recall_lme.Question, answers: list[str]) -> recall_lme.Question:
    """`q` with each recorded answer as the session stored it: an answer longer than the
    turn's room was cut at its length limit, as a model's would be, so what was said — and
    what recall, or a baseline, can bring back — is its start. An answer never given stays
    as recorded."""
    from dataclasses import replace
    kept = sorted({a.strip() for a in answers if len(a.strip()) >= 20}, key=len, reverse=True)
    turns = []
    for t in q.turns:
        if t.role == "assistant":
            recorded = t.content.strip()
            cut = next((a for a in kept if recorded.startswith(a)), recorded)
            t = replace(t, content=cut)
        turns.append(t)
    return replace(q, turns=turns)


def emit_parts(emit: Callable[..., None], replayed: list[Replayed], count: Callable[[str], int],
               **fields: object) -> None:
    """Where the questions' prompts' tokens went (medians and means), and the summary calls
    per message sent; then what recall added is about: the share of its tokens from the
    evidence sessions, and what a request the history is not about got."""
    names = sorted({k for r in replayed for k in r.parts})
    emit(**fields, what="prompt_parts",
         median={k: statistics.median(r.parts.get(k, 0) for r in replayed) for k in names},
         mean={k: round(statistics.fmean(r.parts.get(k, 0) for r in replayed)) for k in names},
         prompt_tokens_median=statistics.median(r.tokens for r in replayed),
         summary_calls_per_turn=round(sum(r.summary_calls for r in replayed) / max(1, sum(r.turns for r in replayed)), 3),
         failed_turns=dict(sum((r.errors for r in replayed), Counter())),
         seconds_per_question=round(statistics.fmean(r.seconds for r in replayed), 1),
         ranked_by_meaning=sum(r.by_meaning for r in replayed))
    shares = [from_evidence(r.said, r.recalled, count) for r in replayed if r.said is not None]
    unrelated = [r.unrelated_added for r in replayed if r.unrelated_added is not None]
    emit(**fields, what="recall_precision",
         recall_tokens_from_evidence_pct=round(100 * sum(o for _, o in shares) / max(1, sum(t for t, _ in shares)), 1),
         recall_tokens_mean=round(statistics.fmean(t for t, _ in shares)) if shares else 0,
         unrelated_asked=len(unrelated),
         unrelated_nothing_added_pct=round(100 * sum(1 for u in unrelated if u == 0) / max(1, len(unrelated)), 1),
         unrelated_added_tokens_mean=round(statistics.fmean(unrelated)) if unrelated else 0,
         unrelated_added_tokens_max=max(unrelated, default=0))
