"""One level of automatic compaction, run: exactly one compaction.request and one
compaction.result, the change it makes (levels 1 and 2 in early_levels.py, level 3 in
checkpoints.py) committed with its audit record and a snapshot before a pass's first
change; a change that does not shrink the context, or frees less than a pass may take the
re-reading for, is not made. Which levels a pass runs is automatic.py's to decide."""

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, field

import msgspec

from ctxkeep.daemon.compaction import early_levels, relevance
from ctxkeep.daemon.compaction.applier import Applier
from ctxkeep.daemon.compaction.checkpoints import Checkpointer
from ctxkeep.daemon.compaction.passes import Pass, least_step
from ctxkeep.daemon.compaction.planner import STRATEGY, Change, compaction_marker, preserved_seqs
from ctxkeep.daemon.compaction.summarizer import SummaryRejected
from ctxkeep.daemon.context.announce import ON_LOOP_MESSAGES
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.usage import Budget, measure
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.context_records import CompactionRecord
from ctxkeep.daemon.store.records import View
from ctxkeep.daemon.store.store import StoreError
from ctxkeep.protocol.events import CompactionProgress, CompactionRequest, CompactionResult, ContextWarning

log = logging.getLogger(__name__)


@dataclass
class LevelRunner:
    """Runs one level of a pass at a time."""

    parts: Parts
    applier: Applier
    checkpointer: Checkpointer
    #: Stored messages' word counts, for level 2's BM25.
    terms: relevance.TermCache = field(default_factory=relevance.TermCache)
    #: Recall's vectors of messages, for level 2's meaning (None: by words alone).
    vectors: relevance.PassageVectors | None = None

    def total(self, view: View) -> int:
        """The context as it would be sent now, estimated."""
        return self.parts.estimator.context(*view)

    async def _total(self, view: View) -> int:
        """`total`, in a worker thread for a context of thousands of messages (an import's)."""
        if len(view.active) > ON_LOOP_MESSAGES:
            return await asyncio.to_thread(self.total, view)
        return self.total(view)

    def budget(self, view: View) -> Budget:
        return measure(*view, self.parts.estimator, self.parts.config,
                       self.parts.announcer.recall_read(view.session.model))

    async def run(self, view: View, level: int, pass_: Pass) -> View:
        """Run one level: exactly one compaction.request and one compaction.result.
        Returns the session as it left it (`view` itself when nothing changed)."""
        session, context, active = view
        before = await self._total(view)
        cid = secrets.token_hex(6)
        self.parts.bus.publish(CompactionRequest(
            compaction_id=cid, requested_by=f"auto ({pass_.reason})", tokens_before=before,
            messages=len(active), level=level, strategy=STRATEGY[level]), session.id)
        status, note, after = "failed", "", before
        try:
            change = await self._change(view, level, pass_, cid)
            if isinstance(change, str):
                status, note = "skipped", change
                return view
            new = msgspec.structs.replace(context, seqs=change.seqs, checkpoints=change.checkpoints,
                                          file_summaries=change.file_summaries)
            kept = set(change.seqs)  # once: in the comprehension it would be made per message
            after = await self._total(View(session, new, [m for m in active if m.seq in kept]))
            if after >= before:
                note = (f"it would not shrink the context ({before:,} → ~{after:,} tokens): "
                        "nothing was changed")
                after = before
                return view
            share = self.parts.config.compaction_min_step
            least = least_step(session.window, pass_.must_fit, share)
            if before - after < least and not change.judged:
                status = "skipped"
                note = (f"it would free only ~{before - after:,} tokens, under {share:.0%} of the window: "
                        "nothing was changed (each pass makes the model re-read the whole prompt)")
                after = before
                return view
            changed, cancelled = await self._commit(view, change, level, pass_, before, after)
            status, note = "ok", change.note
            pass_.levels.append(level)
            for kind, message in change.warnings:
                self.parts.bus.publish(ContextWarning(kind=kind, message=message), session.id)
            if cancelled:  # it landed before the cancel could stop it: say so, then stop
                raise asyncio.CancelledError
            return changed
        except asyncio.CancelledError:
            if status != "ok":
                note = "cancelled"
            raise
        except (RequestError, SummaryRejected, StoreError) as exc:
            note = str(exc)
            return view
        except Exception as exc:  # a bug must still end the compaction
            log.exception("session=%s automatic compaction level %d failed", session.id, level)
            note = f"internal error ({exc!r}): see the daemon's log"
            return view
        finally:
            self._result(cid, session.id, status, level, note, before, after)
            if status == "ok":
                await self.parts.announcer.compacted(session.id)

    async def _change(self, view: View, level: int, pass_: Pass, cid: str) -> Change | str:
        """What `level` would change now (or why nothing)."""
        keep_recent = self.parts.config.keep_recent_messages if pass_.keep_recent is None \
            else pass_.keep_recent
        preserved = preserved_seqs(view.context, view.active, keep_recent,
                                   self.parts.config.preserve_user_messages, pass_.keep_tools)
        if level == 1:
            if pass_.last_resort is not None:
                return early_levels.long_answers(view, pass_.last_resort)
            return early_levels.file_outlines(self.parts.config, view, pass_.keep_tools)
        if level == 2 and pass_.displace:
            return early_levels.displaced(view, pass_.displace)
        if level == 2:
            return await early_levels.prune(self.terms, view, preserved, self.vectors)
        def progress(step: int, steps: int, detail: str, expected: float | None) -> None:
            self.parts.bus.publish(CompactionProgress(compaction_id=cid, step=step, steps=steps, detail=detail,
                                                      expected_s=expected), view.session.id)
        return await self.checkpointer.checkpoint(view, self.budget(view), preserved, keep_recent,
                                                  pass_.extra, progress,
                                                  least_step(view.session.window, pass_.must_fit,
                                                             self.parts.config.compaction_min_step))

    async def _commit(self, view: View, change: Change, level: int, pass_: Pass, before: int,
                      after: int) -> tuple[View, bool]:
        """Snapshot (once per pass), then the change with its audit record."""
        session = view.session
        kept = set(change.seqs)
        if not pass_.snapshot_id:
            pass_.snapshot_id = await self.applier.snapshot(
                session.id, f"before compaction (automatic: {pass_.reason})")
        audit = CompactionRecord(
            time=time.time(), level=level, strategy=STRATEGY[level], tokens_before=before,
            tokens_after=after, tokens_freed=before - after,
            summarized=[s for s in view.context.seqs if s not in kept],
            kept=change.seqs, summary_seq=-1, model=session.model, requested_by="auto",
            reason=change.note)
        return await self.applier.commit_level(view, change, audit, after, first=not pass_.levels)

    def _result(self, cid: str, session_id: str, status: str, level: int, reason: str,
                before: int, after: int) -> None:
        marker = compaction_marker(before, after, level) if status == "ok" else ""
        self.parts.bus.publish(CompactionResult(
            compaction_id=cid, status=status, reason=reason, tokens_before=before,  # type: ignore[arg-type]
            tokens_after=after, tokens_freed=max(0, before - after), level=level,
            strategy=STRATEGY[level], marker=marker), session_id)
        log.info("session=%s auto compaction level %d %s %s", session_id, level, status, reason or marker)
