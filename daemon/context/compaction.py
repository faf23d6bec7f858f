"""Manual compaction (seed 000): a summary of all but the last turns, plus the verbatim tail.

One non-streaming summarization call with no tools — or, when the history is
too long for one call, one per chunk and then merge calls — each sized so
that its prompt plus the summary's own room fits the compaction model's
window. Only when a summary is accepted (not empty, smaller than what it
replaces) is the active context replaced, in one LMDB transaction, by
[summary, pinned messages, tail]; history keeps every message, the goal
record stays, and a snapshot taken just before lets `undo` put it all back.
Anything else — a model error, a rejected summary, a cancel, a crash —
leaves the session as it was.
"""

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import (
    CompactionProgress, CompactionRequest, CompactionResult, SnapshotCreated,
)
from ctxkeep.protocol.replies import CompactionPlan
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.announce import Announcer
from ctxkeep.daemon.server.bus import EventBus
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.jobs.queue import Job, SessionJobs
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.models.backend import OllamaBackend
from ctxkeep.daemon.context.prompt import (
    COMPACTION_SYSTEM, MERGE_SYSTEM, SUMMARY_PREFIX, context_messages, summary_call,
    transcript_line,
)
from ctxkeep.daemon.store.records import ActiveContext, CompactionRecord, MessageRecord, NewMessage, SessionRecord
from ctxkeep.daemon.store.store import Store, StoreError

log = logging.getLogger(__name__)

#: Room kept free in every summarization prompt for estimate error and template tokens.
_MARGIN = 0.9
_HEADER = "Conversation to summarize:"
#: The fewest tokens of text a summarization call must be able to take.
MIN_CALL_BUDGET = 64
_MERGE_HEADER = "Summaries of consecutive parts of the conversation, in order:"


class SummaryRejected(Exception):
    """The model's summary cannot stand for what it would replace."""


#: Automatic levels in the user's words.
LEVEL_WORDS = {1: "files as summaries", 2: "older messages set aside", 3: "checkpoint"}


def compaction_marker(before: int, after: int, level: int = 0) -> str:
    """Seed 000's log line: `── compacted: 82,400 → ~14,200 tokens (68,200 freed) ──`
    (with the level in words for an automatic one)."""
    how = f" ({LEVEL_WORDS[level]})" if level else ""
    return f"── compacted{how}: {before:,} → ~{after:,} tokens ({before - after:,} freed) ──"


def take_snapshot(store: Store, bus: EventBus, session_id: str, reason: str) -> str:
    """Save the session's context state before a compaction changes it, and say so;
    returns the snapshot's id."""
    snapshot = store.save_snapshot(session_id, reason)
    bus.publish(SnapshotCreated(snapshot=snapshot.info()), session_id)
    return snapshot.id


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


def chunk_lines(lines: list[tuple[str, int]], budget: int) -> list[str]:
    """Greedy chunks of transcript lines, each at most `budget` estimated tokens; a line
    longer than the budget is cut into pieces that fit."""
    budget = max(1, budget)
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
class Summarizer:
    """Summarization calls that never overflow the summarizing model's window."""

    backend: OllamaBackend
    estimator: Estimator
    model: str
    window: int
    #: The most tokens one summary may take (num_predict).
    room: int
    #: Estimated tokens of text one call may be given.
    budget: int

    @classmethod
    async def for_model(cls, backend: OllamaBackend, estimator: Estimator, model: str,
                        num_ctx: int, max_room: int) -> "Summarizer":
        facts = await backend.facts(model)
        window = min(num_ctx, facts.context_length) if facts.context_length else num_ctx
        room = min(max_room, window // 4)
        system_cost = estimator.prompt(model, summary_call(COMPACTION_SYSTEM, "", "", _HEADER)) + 400
        return cls(backend, estimator, model, window, room, int((window - room - system_cost) * _MARGIN))

    def check_room(self) -> None:
        """Refuse to start when the summarizing model's window leaves no room for text."""
        if self.budget < MIN_CALL_BUDGET:
            raise RequestError(ErrorCode.CONTEXT_OVERFLOW,
                               f"the compaction model's window ({self.window:,} tokens) leaves no room "
                               "for a summarization call: raise num_ctx or set compaction_model")

    def chunks(self, messages: list[MessageRecord]) -> list[str]:
        lines = [(line, self.estimator.text(self.model, line)) for line in map(transcript_line, messages)]
        return chunk_lines(lines, self.budget)

    async def call(self, system: str, instructions: str, body: str, header: str,
                   room: int | None = None) -> tuple[str, int]:
        """One summary: (text, its tokens). Raises SummaryRejected on an empty one."""
        messages = summary_call(system, instructions, body, header)
        options = {"num_ctx": self.window, "num_predict": room or self.room}
        response = await self.backend.chat_once(self.model, messages, options)
        text = (response.message.content or "").strip()
        if not text:
            raise SummaryRejected("the model returned an empty summary")
        return text, int(response.eval_count or 0) or self.estimator.text(self.model, text)

    async def summarize(self, chunks: list[str], system: str, instructions: str,
                        progress: Callable[[int, int, str], None] = lambda *_: None,
                        room: int | None = None) -> tuple[str, int]:
        """The summary of the chunks: one call each, then merge calls until one remains."""
        self.check_room()
        steps = len(chunks) + (1 if len(chunks) > 1 else 0)
        step = 0
        texts: list[tuple[str, int]] = []
        for chunk in chunks:
            texts.append(await self.call(system, instructions, chunk, _HEADER, room))
            step += 1
            progress(step, max(steps, step), f"summarized part {step} of {len(chunks)}")
        while len(texts) > 1:
            lines = [(f"Part {i + 1}: {t}\n\n", self.estimator.text(self.model, t) + 4)
                     for i, (t, _) in enumerate(texts)]
            groups = chunk_lines(lines, self.budget)
            if len(groups) >= len(texts):  # each summary alone fills a call: merge pairwise
                groups = ["".join(line for line, _ in lines[i:i + 2]) for i in range(0, len(lines), 2)]
            texts = []
            for group in groups:
                texts.append(await self.call(MERGE_SYSTEM, instructions, group, _MERGE_HEADER, room))
                step += 1
                progress(step, max(steps, step), "merged summaries")
        return texts[0]


def instructions_for(context: ActiveContext, extra: str = "") -> str:
    """What every summarizer is told: the goal record (seed 002) and any extra instructions."""
    return "\n\n".join(p for p in (goal_markers.summarizer_context(context.goals), extra) if p)


@dataclass
class Plan:
    """What a compaction of a session would do now."""

    session: SessionRecord
    context: ActiveContext
    active: list[MessageRecord]
    head: list[MessageRecord]
    keep: list[MessageRecord]
    summarizer: Summarizer
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
            calls=self.calls if not self.skip_reason else 0, model=self.summarizer.model,
            skip_reason=self.skip_reason)


@dataclass
class Compactor:
    """Plans and runs manual compactions through the session job queue."""

    store: Store
    bus: EventBus
    backend: OllamaBackend
    config: Config
    jobs: SessionJobs
    estimator: Estimator
    announcer: Announcer

    def model_for(self, session: SessionRecord) -> str:
        return session.compaction_model or self.config.compaction_model or session.model

    async def summarizer(self, session: SessionRecord) -> Summarizer:
        return await Summarizer.for_model(self.backend, self.estimator, self.model_for(session),
                                          session.num_ctx, self.config.summary_max_tokens)

    def tokens_now(self, session: SessionRecord, context: ActiveContext,
                   active: list[MessageRecord]) -> tuple[int, bool]:
        """The context's size: the last exact count, or an estimate when there is none."""
        if session.tokens_exact and session.token_count:
            return session.token_count, True
        return self.estimator.prompt(session.model, context_messages(session, context, active)), False

    async def plan(self, session: SessionRecord, tail_turns: int | None) -> Plan:
        """What compacting now would do (asks /api/show for the compaction model's window)."""
        tail = self.config.compaction_tail_turns if tail_turns is None else tail_turns
        context = self.store.context(session.id)
        active = self.store.messages(session.id, context.seqs)
        older, tail_messages = split_tail(active, tail)
        pinned = set(context.pinned)
        head = [m for m in older if m.seq not in pinned]
        keep = [m for m in older if m.seq in pinned] + tail_messages
        summarizer = await self.summarizer(session)
        before, exact = self.tokens_now(session, context, active)
        summarized = sum(self.estimator.message(session.model, m.content) for m in head)
        # A summary typically takes about a quarter of what it replaces, within its room.
        projected = min(summarizer.room, max(16, summarized // 4))
        after = self.estimator.prompt(session.model, context_messages(session, context, keep)) + projected
        plan = Plan(session=session, context=context, active=active, head=head, keep=keep,
                    summarizer=summarizer, tokens_before=before, before_exact=exact,
                    tokens_summarized=summarized, tokens_after=min(after, before) if head else before)
        if not head:
            plan.skip_reason = (f"nothing to compact: the session has {len(active)} active "
                                f"messages, all inside the last {tail} turns kept verbatim or pinned")
        elif all(m.kind == "summary" for m in head):
            plan.skip_reason = "nothing to compact: everything before the kept turns is already a summary"
        elif summarizer.budget < MIN_CALL_BUDGET:
            plan.skip_reason = (f"the compaction model's window ({summarizer.window:,} tokens) leaves "
                                "no room for a summarization call: raise num_ctx or set compaction_model")
        else:
            plan.chunks = summarizer.chunks(head)
        return plan

    def submit(self, session: SessionRecord, tail_turns: int | None, instructions: str,
               requested_by: str) -> tuple[Job, int]:
        """Queue a compaction; raises RequestError(busy) when one is already queued or running."""
        if self.jobs.has(session.id, "compaction"):
            raise RequestError(ErrorCode.BUSY, f"session {session.name!r} is already compacting: "
                                               "wait for its compaction.result")
        job = Job(session_id=session.id, kind="compaction",
                  body=lambda j: self._execute(j, tail_turns, instructions, requested_by),
                  fail=lambda j, code, message: CompactionResult(
                      compaction_id=j.id, status="failed", reason=_reason(code, message)))
        return job, self.jobs.submit(job)

    # -- running ---------------------------------------------------------------

    def _result(self, job: Job, status: str, **fields) -> None:
        job.end(CompactionResult(compaction_id=job.id, status=status, **fields))  # type: ignore[arg-type]
        log.info("session=%s compaction=%s %s %s", job.session_id, job.id, status,
                 fields.get("reason") or fields.get("marker", ""))

    async def _execute(self, job: Job, tail_turns: int | None, instructions: str,
                       requested_by: str) -> None:
        session = self.store.session(job.session_id)
        try:
            plan = await self.plan(session, tail_turns)
        except RequestError as exc:
            self._result(job, "failed", reason=_reason(exc.code, exc.message))
            return
        self.bus.publish(CompactionRequest(
            compaction_id=job.id, requested_by=requested_by or "client",
            tokens_before=plan.tokens_before, messages=len(plan.head),
            calls=0 if plan.skip_reason else plan.calls), session.id)
        if plan.skip_reason:
            self._result(job, "skipped", reason=plan.skip_reason, tokens_before=plan.tokens_before,
                         tokens_after=plan.tokens_before)
            return
        failure = dict(tokens_before=plan.tokens_before, tokens_after=plan.tokens_before)
        try:
            def progress(step: int, steps: int, detail: str) -> None:
                self.bus.publish(CompactionProgress(compaction_id=job.id, step=step, steps=steps,
                                                    detail=detail), job.session_id)
            text, tokens = await plan.summarizer.summarize(
                plan.chunks, COMPACTION_SYSTEM, instructions_for(plan.context, instructions), progress)
            self._accept(job, plan, text, tokens, requested_by)
        except RequestError as exc:
            self._result(job, "failed", reason=_reason(exc.code, exc.message), **failure)
        except SummaryRejected as exc:
            self._result(job, "failed", reason=f"summary rejected: {exc}", **failure)
        except asyncio.CancelledError:
            self._result(job, "failed", reason=_reason(*job.cancel_reason), **failure)
        except StoreError as exc:
            self._result(job, "failed", reason=_reason(exc.code, str(exc)), **failure)

    def _accept(self, job: Job, plan: Plan, text: str, tokens: int, requested_by: str) -> None:
        summary_tokens = self.estimator.message(plan.session.model, SUMMARY_PREFIX + text)
        if max(tokens, summary_tokens) >= plan.tokens_summarized:
            raise SummaryRejected(f"it is not smaller than what it replaces "
                                  f"({max(tokens, summary_tokens):,} ≥ {plan.tokens_summarized:,} tokens)")
        session = plan.session
        content = SUMMARY_PREFIX + text
        role = self.config.summary_role
        standin = MessageRecord(seq=-1, role=role, content=content, created=0.0, kind="summary")
        after = self.estimator.prompt(session.model, context_messages(session, plan.context,
                                                                      [standin, *plan.keep]))
        if after >= plan.tokens_before:
            raise SummaryRejected(f"the context would not shrink ({plan.tokens_before:,} → "
                                  f"~{after:,} tokens)")
        freed = plan.tokens_before - after
        record = CompactionRecord(
            time=time.time(), level=0, strategy="summary", tokens_before=plan.tokens_before,
            tokens_after=after, tokens_freed=freed, summarized=[m.seq for m in plan.head],
            kept=[m.seq for m in plan.keep], summary_seq=-1, model=plan.summarizer.model,
            requested_by=requested_by)
        take_snapshot(self.store, self.bus, session.id, "before compaction (manual)")
        session, summary = self.store.compact(
            session.id, expected=[m.seq for m in plan.active],
            summary=NewMessage(role=role, content=content, model=plan.summarizer.model,
                               eval_count=tokens, kind="summary"),
            keep=[m.seq for m in plan.keep], record=record, token_estimate=after)
        self._result(job, "ok", tokens_before=plan.tokens_before, tokens_after=after,
                     tokens_freed=freed, marker=compaction_marker(plan.tokens_before, after),
                     summarized=len(plan.head), kept=len(plan.keep), summary_seq=summary.seq)
        self.announcer.compacted(session.id)


def _reason(code: ErrorCode, message: str) -> str:
    return f"{code.value}: {message}"
