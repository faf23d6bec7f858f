"""Manual compaction (seed 000): a summary of all but the last turns, plus the verbatim tail.

One non-streaming summarization call with no tools — or, when the history is
too long for one call, one per chunk and then merge calls — each sized so
that its prompt plus the summary's own room fits the compaction model's
window. Only when a summary is accepted (not empty, smaller than what it
replaces) is the active context replaced, in one LMDB transaction, by
[summary, tail]; history keeps every message. Anything else — a model error,
a rejected summary, a cancel, a crash — leaves the session as it was.
"""

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field

from ..protocol import ErrorCode
from ..protocol.events import (
    CompactionProgress, CompactionRequest, CompactionResult, ContextUsage, SessionUpdated,
)
from ..protocol.replies import CompactionPlan
from .bus import EventBus
from .config import Config
from .estimator import Estimator
from .jobs import Job, SessionJobs
from .ollama_backend import ModelCallError, OllamaBackend
from .prompt import (
    COMPACTION_SYSTEM, MERGE_SYSTEM, SUMMARY_PREFIX, context_messages, summary_call,
    transcript_line,
)
from .records import CompactionRecord, MessageRecord, NewMessage, SessionRecord
from .store import Store, StoreError
from .usage import usage_of

log = logging.getLogger(__name__)

#: Room kept free in every summarization prompt for estimate error and template tokens.
_MARGIN = 0.9
_HEADER = "Conversation to summarize:"
_MERGE_HEADER = "Summaries of consecutive parts of the conversation, in order:"


class SummaryRejected(Exception):
    """The model's summary cannot stand for what it would replace."""


def marker(before: int, after: int, freed: int) -> str:
    """Seed 000's log line: `── compacted: 82,400 → ~14,200 tokens (68,200 freed) ──`."""
    return f"── compacted: {before:,} → ~{after:,} tokens ({freed:,} freed) ──"


def split_tail(active: list[MessageRecord], tail_turns: int) -> tuple[list[MessageRecord], list[MessageRecord]]:
    """(head to summarize, tail kept): the tail starts at the user message that opens
    the `tail_turns`-th turn from the end; whatever follows it (tool calls too) stays."""
    starts = [i for i, m in enumerate(active) if m.role == "user" and m.kind == "message"]
    if tail_turns == 0:
        return active, []
    if len(starts) < tail_turns:
        return [], active
    cut = starts[-tail_turns]
    return active[:cut], active[cut:]


@dataclass
class Plan:
    """What a compaction of a session would do now."""

    session: SessionRecord
    active: list[MessageRecord]
    head: list[MessageRecord]
    keep: list[MessageRecord]
    model: str
    window: int
    room: int
    budget: int
    tokens_before: int
    before_exact: bool
    tokens_summarized: int
    tokens_after: int
    chunks: list[str] = field(default_factory=list)
    skip_reason: str = ""

    @property
    def calls(self) -> int:
        return len(self.chunks) + (1 if len(self.chunks) > 1 else 0)

    def reply(self, request_id: str) -> CompactionPlan:
        return CompactionPlan(
            id=request_id, session_id=self.session.id, summarize=[m.seq for m in self.head],
            keep=[m.seq for m in self.keep], tokens_before=self.tokens_before,
            tokens_before_exact=self.before_exact, tokens_summarized=self.tokens_summarized,
            tokens_after=self.tokens_after, tokens_freed=max(0, self.tokens_before - self.tokens_after),
            calls=self.calls if not self.skip_reason else 0, model=self.model,
            skip_reason=self.skip_reason)


def chunk_lines(lines: list[tuple[str, int]], budget: int) -> list[str]:
    """Greedy chunks of transcript lines, each at most `budget` estimated tokens; a line
    longer than the budget is cut into pieces that fit."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for text, tokens in lines:
        pieces = [(text, tokens)]
        if tokens > budget:
            n = math.ceil(tokens / budget)
            size = math.ceil(len(text) / n)
            pieces = [(text[i:i + size], math.ceil(tokens / n)) for i in range(0, len(text), size)]
        for piece, cost in pieces:
            if current and used + cost > budget:
                chunks.append("".join(current))
                current, used = [], 0
            current.append(piece)
            used += cost
    if current:
        chunks.append("".join(current))
    return chunks


@dataclass
class Compactor:
    """Plans and runs compactions through the session job queue."""

    store: Store
    bus: EventBus
    backend: OllamaBackend
    config: Config
    jobs: SessionJobs
    estimator: Estimator

    def model_for(self, session: SessionRecord) -> str:
        return session.compaction_model or self.config.compaction_model or session.model

    def tokens_now(self, session: SessionRecord, active: list[MessageRecord]) -> tuple[int, bool]:
        """The context's size: the last exact count, or an estimate when there is none."""
        if session.tokens_exact and session.token_count:
            return session.token_count, True
        return self.estimator.prompt(session.model, context_messages(session, active)), False

    async def plan(self, session: SessionRecord, tail_turns: int | None) -> Plan:
        """What compacting now would do (asks /api/show for the compaction model's window)."""
        tail = self.config.compaction_tail_turns if tail_turns is None else tail_turns
        active = self.store.active_messages(session.id)
        head, keep = split_tail(active, tail)
        model = self.model_for(session)
        facts = await self.backend.facts(model)
        window = min(session.num_ctx, facts.context_length) if facts.context_length else session.num_ctx
        room = min(self.config.summary_max_tokens, window // 4)
        system_cost = self.estimator.prompt(model, summary_call(COMPACTION_SYSTEM, "", "", _HEADER))
        budget = int((window - room - system_cost) * _MARGIN)
        before, exact = self.tokens_now(session, active)
        lines = [(line, self.estimator.text(model, line)) for line in map(transcript_line, head)]
        summarized = sum(self.estimator.message(session.model, m.content) for m in head)
        # A summary typically takes about a quarter of what it replaces, within its room.
        projected_summary = min(room, max(16, summarized // 4))
        after = self.estimator.prompt(session.model, context_messages(session, keep)) + projected_summary
        plan = Plan(session=session, active=active, head=head, keep=keep, model=model,
                    window=window, room=room, budget=budget, tokens_before=before,
                    before_exact=exact, tokens_summarized=summarized,
                    tokens_after=min(after, before) if head else before)
        if not head:
            plan.skip_reason = (f"nothing to compact: the session has {len(active)} active "
                                f"messages, all inside the last {tail} turns kept verbatim")
        elif all(m.kind == "summary" for m in head):
            plan.skip_reason = "nothing to compact: everything before the kept turns is already a summary"
        elif budget < 64:
            plan.skip_reason = (f"the compaction model's window ({window:,} tokens) leaves no room "
                                "for a summarization call: raise num_ctx or set compaction_model")
        else:
            plan.chunks = chunk_lines(lines, budget)
        return plan

    def submit(self, session: SessionRecord, tail_turns: int | None, instructions: str,
               requested_by: str) -> tuple[Job, int]:
        """Queue a compaction; raises ValueError when one is already queued or running."""
        if self.jobs.has(session.id, "compaction"):
            raise ValueError(f"session {session.name!r} is already compacting: wait for its "
                             "compaction.result")
        job = Job(session_id=session.id, kind="compaction")
        ahead = self.jobs.submit(
            job, lambda j: self._execute(j, tail_turns, instructions, requested_by),
            lambda j: self._result(j, "failed", reason="cancelled before it started"))
        return job, ahead

    # -- running ---------------------------------------------------------------

    def _result(self, job: Job, status: str, **fields) -> None:
        job.ended = True
        self.bus.publish(CompactionResult(compaction_id=job.id, status=status, **fields),  # type: ignore[arg-type]
                         job.session_id)
        log.info("session=%s compaction=%s %s %s", job.session_id, job.id, status,
                 fields.get("reason") or fields.get("marker", ""))

    async def _execute(self, job: Job, tail_turns: int | None, instructions: str,
                       requested_by: str) -> None:
        try:
            session = self.store.session(job.session_id)
            plan = await self.plan(session, tail_turns)
        except (ModelCallError, StoreError) as exc:
            self._result(job, "failed", reason=str(exc))
            return
        if plan.skip_reason:
            self._result(job, "skipped", reason=plan.skip_reason, tokens_before=plan.tokens_before,
                         tokens_after=plan.tokens_before)
            return
        self.bus.publish(CompactionRequest(
            compaction_id=job.id, requested_by=requested_by or "client",
            tokens_before=plan.tokens_before, messages=len(plan.head), calls=plan.calls),
            session.id)
        failure = dict(tokens_before=plan.tokens_before, tokens_after=plan.tokens_before)
        try:
            text, tokens = await self._summarize(job, plan, instructions)
            self._accept(job, plan, text, tokens, requested_by)
        except ModelCallError as exc:
            self._result(job, "failed", reason=f"{exc.code.value}: {exc.message}", **failure)
        except SummaryRejected as exc:
            self._result(job, "failed", reason=f"summary rejected: {exc}", **failure)
        except asyncio.CancelledError:
            self._result(job, "failed", reason="cancelled by a client", **failure)
        except StoreError as exc:
            self._result(job, "failed", reason=f"{ErrorCode.STORAGE_ERROR.value}: {exc}", **failure)

    async def _summarize(self, job: Job, plan: Plan, instructions: str) -> tuple[str, int]:
        """The summary of the plan's head, in chunks and merges when it needs more than one call."""
        step, steps = 0, plan.calls
        texts: list[tuple[str, int]] = []
        for chunk in plan.chunks:
            texts.append(await self._call(plan, COMPACTION_SYSTEM, instructions, chunk, _HEADER))
            step += 1
            self.bus.publish(CompactionProgress(compaction_id=job.id, step=step, steps=max(steps, step),
                                                detail=f"summarized part {step} of {len(plan.chunks)}"),
                             job.session_id)
        while len(texts) > 1:
            lines = [(f"Part {i + 1}: {t}\n\n", self.estimator.text(plan.model, t) + 4)
                     for i, (t, _) in enumerate(texts)]
            groups = chunk_lines(lines, plan.budget)
            if len(groups) >= len(texts):  # each summary alone fills a call: merge pairwise
                groups = ["".join(line for line, _ in lines[i:i + 2]) for i in range(0, len(lines), 2)]
            texts = []
            for group in groups:
                texts.append(await self._call(plan, MERGE_SYSTEM, instructions, group, _MERGE_HEADER))
                step += 1
                self.bus.publish(CompactionProgress(compaction_id=job.id, step=step,
                                                    steps=max(steps, step), detail="merged summaries"),
                                 job.session_id)
        return texts[0]

    async def _call(self, plan: Plan, system: str, instructions: str, body: str,
                    header: str) -> tuple[str, int]:
        messages = summary_call(system, instructions, body, header)
        options = {"num_ctx": plan.window, "num_predict": plan.room}
        response = await self.backend.chat_once(plan.model, messages, options)
        text = (response.message.content or "").strip()
        if not text:
            raise SummaryRejected("the model returned an empty summary")
        return text, int(response.eval_count or 0) or self.estimator.text(plan.model, text)

    def _accept(self, job: Job, plan: Plan, text: str, tokens: int, requested_by: str) -> None:
        summary_tokens = self.estimator.message(plan.session.model, SUMMARY_PREFIX + text)
        if max(tokens, summary_tokens) >= plan.tokens_summarized:
            raise SummaryRejected(f"it is not smaller than what it replaces "
                                  f"({max(tokens, summary_tokens):,} ≥ {plan.tokens_summarized:,} tokens)")
        session = plan.session
        content = SUMMARY_PREFIX + text
        role = self.config.summary_role
        standin = MessageRecord(seq=-1, role=role, content=content, created=0.0, kind="summary")
        after = self.estimator.prompt(session.model, context_messages(session, [standin, *plan.keep]))
        freed = max(0, plan.tokens_before - after)
        record = CompactionRecord(
            time=time.time(), level=0, strategy="summary", tokens_before=plan.tokens_before,
            tokens_after=after, tokens_freed=freed, summarized=[m.seq for m in plan.head],
            kept=[m.seq for m in plan.keep], summary_seq=-1, model=plan.model,
            requested_by=requested_by)
        session, summary = self.store.compact(
            session.id, expected=[m.seq for m in plan.active],
            summary=NewMessage(role=role, content=content, model=plan.model, eval_count=tokens),
            keep=[m.seq for m in plan.keep], record=record, token_estimate=after)
        self._result(job, "ok", tokens_before=plan.tokens_before, tokens_after=after,
                     tokens_freed=freed, marker=marker(plan.tokens_before, after, freed),
                     summarized=len(plan.head), kept=len(plan.keep), summary_seq=summary.seq)
        self.bus.publish(SessionUpdated(session=session.info(busy=True)), session.id)
        self.bus.publish(ContextUsage(usage=usage_of(
            session, self.store.active_messages(session.id), self.estimator)), session.id)
