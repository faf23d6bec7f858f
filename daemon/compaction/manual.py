"""Manual compaction: a summary of all but the last turns, plus the verbatim tail.

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
import time
from dataclasses import dataclass, field

from ctxkeep.daemon.compaction.applier import Applier
from ctxkeep.daemon.compaction.planner import compaction_marker, manual_parts
from ctxkeep.daemon.compaction.prompts import COMPACTION_SYSTEM, SUMMARY_PREFIX
from ctxkeep.daemon.compaction.summarizer import (
    MIN_CALL_BUDGET,
    Summarizer,
    SummaryRejected,
    instructions_for,
)
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.jobs.queue import Job, SessionJobs
from ctxkeep.daemon.store.context_records import ActiveContext, CompactionRecord
from ctxkeep.daemon.store.records import MessageRecord, NewMessage, SessionRecord
from ctxkeep.daemon.store.store import StoreError
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import CompactionProgress, CompactionRequest, CompactionResult
from ctxkeep.protocol.replies import CompactionPlan

log = logging.getLogger(__name__)


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

    parts: Parts
    jobs: SessionJobs
    applier: Applier

    def tokens_now(self, session: SessionRecord, context: ActiveContext,
                   active: list[MessageRecord]) -> tuple[int, bool]:
        """The context's size: the last exact count, or an estimate when there is none."""
        if session.count.exact and session.count.tokens:
            return session.count.tokens, True
        return self.parts.estimator.context(session, context, active), False

    async def plan(self, session: SessionRecord, tail_turns: int | None) -> Plan:
        """What compacting now would do (asks /api/show for the compaction model's window)."""
        config = self.parts.config
        tail = config.compaction_tail_turns if tail_turns is None else tail_turns
        _, context, active = self.parts.store.history.view(session.id)
        head, keep = manual_parts(context, active, tail)
        summarizer = (await Summarizer.for_session(self.parts.backend, self.parts.estimator, config, session,
                                                   self.parts.speeds)).continuing(self.parts.served, session.id)
        before, exact = self.tokens_now(session, context, active)
        summarized = sum(self.parts.estimator.message(session.model, m.content) for m in head)
        # A summary typically takes about a quarter of what it replaces, within its room.
        projected = min(summarizer.room, max(16, summarized // 4))
        after = self.parts.estimator.context(session, context, keep) + projected
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
        session = self.parts.store.sessions.get(job.session_id)
        try:
            plan = await self.plan(session, tail_turns)
        except RequestError as exc:
            self._result(job, "failed", reason=_reason(exc.code, exc.message))
            return
        self.parts.bus.publish(CompactionRequest(
            compaction_id=job.id, requested_by=requested_by or "client",
            tokens_before=plan.tokens_before, messages=len(plan.head),
            calls=0 if plan.skip_reason else plan.calls), session.id)
        if plan.skip_reason:
            self._result(job, "skipped", reason=plan.skip_reason, tokens_before=plan.tokens_before,
                         tokens_after=plan.tokens_before)
            return
        failure = dict(tokens_before=plan.tokens_before, tokens_after=plan.tokens_before)
        try:
            def progress(step: int, steps: int, detail: str, expected: float | None) -> None:
                self.parts.bus.publish(CompactionProgress(compaction_id=job.id, step=step, steps=steps,
                                                          detail=detail, expected_s=expected), job.session_id)
            text, tokens = await plan.summarizer.summarize(
                plan.chunks, COMPACTION_SYSTEM, instructions_for(plan.context, instructions), progress,
                opening=plan.summarizer.opening_through(plan.head[-1].seq))
            await self._accept(job, plan, text, tokens, requested_by)
        except RequestError as exc:
            self._result(job, "failed", reason=_reason(exc.code, exc.message), **failure)
        except SummaryRejected as exc:
            self._result(job, "failed", reason=f"summary rejected: {exc}", **failure)
        except asyncio.CancelledError:
            self._result(job, "failed", reason=_reason(*job.cancel_reason), **failure)
        except StoreError as exc:
            self._result(job, "failed", reason=_reason(exc.code, str(exc)), **failure)

    async def _accept(self, job: Job, plan: Plan, text: str, tokens: int, requested_by: str) -> None:
        summary_tokens = self.parts.estimator.message(plan.session.model, SUMMARY_PREFIX + text)
        if max(tokens, summary_tokens) >= plan.tokens_summarized:
            raise SummaryRejected(f"it is not smaller than what it replaces "
                                  f"({max(tokens, summary_tokens):,} ≥ {plan.tokens_summarized:,} tokens)")
        session = plan.session
        content = SUMMARY_PREFIX + text
        role = self.parts.config.summary_role
        standin = MessageRecord(seq=-1, role=role, content=content, created=0.0, kind="summary")
        after = self.parts.estimator.context(session, plan.context, [standin, *plan.keep])
        if after >= plan.tokens_before:
            raise SummaryRejected(f"the context would not shrink ({plan.tokens_before:,} → "
                                  f"~{after:,} tokens)")
        freed = plan.tokens_before - after
        record = CompactionRecord(
            time=time.time(), level=0, strategy="summary", tokens_before=plan.tokens_before,
            tokens_after=after, tokens_freed=freed, summarized=[m.seq for m in plan.head],
            kept=[m.seq for m in plan.keep], summary_seq=-1, model=plan.summarizer.model,
            requested_by=requested_by)
        await self.applier.snapshot(session.id, "before compaction (manual)")
        # once the summary is being stored it lands (a cancel then comes too late)
        session, summary, _ = await self.applier.summary(
            session, [m.seq for m in plan.active],
            NewMessage(role=role, content=content, model=plan.summarizer.model, eval_count=tokens,
                       kind="summary"),
            [m.seq for m in plan.keep], record, after)
        self._result(job, "ok", tokens_before=plan.tokens_before, tokens_after=after,
                     tokens_freed=freed, marker=compaction_marker(plan.tokens_before, after),
                     summarized=len(plan.head), kept=len(plan.keep), summary_seq=summary.seq)
        await self.parts.announcer.compacted(session.id)


def _reason(code: ErrorCode, message: str) -> str:
    return f"{code.value}: {message}"
