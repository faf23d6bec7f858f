"""Automatic graduated compaction (seeds 001 and 002).

The conversation's budget is window − reply room − system − goals/pins − checkpoints;
its fill is the conversation's tokens over it. Checked after every turn (with a cooldown
of 2 messages) and before every prompt is sent (then regardless of the cooldown, until
the prompt plus its reply room fits). A pass runs the levels cheapest first and stops
as soon as the fill is under the next level's threshold (for a prompt that must fit: as
soon as it fits); the fill that triggers a lossy level is the estimate lowered by the
estimator's measured error, so an over-estimate never costs the user text.

- level 1 (50 %), `file_compress`: full @file references not used in the last 3
  messages are shown as their summaries (outlines);
- level 2 (65 %), `message_prune`: older messages outside the preserved set are scored
  for relevance to the recent turns (BM25, plus embeddings when Ollama has the model);
  the more relevant half stays, the rest leaves the active context (never the history);
- level 3 (80 %), `checkpoint`: older messages become a new checkpoint (a goal-aware
  summary, their files as outlines); existing checkpoints age — recent, old, ancient,
  merged — each step re-compressed smaller.

Never compressed: the system prompt, the goal record, pinned messages, the last
messages and, by default, the user's own messages, which stay verbatim in place until
they alone pass half the budget: then the oldest of them are summarized into a
checkpoint marked as the user's, with a `user_summary` warning that says so. Every level
must shrink the context, or it fails and changes nothing. One snapshot is taken before a
pass's first change, so `undo` takes back a whole pass.
"""

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, field

import msgspec

from ctxkeep.protocol.events import CompactionRequest, CompactionResult, ContextWarning, SnapshotRestored
from ctxkeep.daemon.context import relevance
from ctxkeep.daemon.context.announce import Announcer
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.context.checkpoints import Checkpointing
from ctxkeep.daemon.context.summarizer import SummaryRejected, compaction_marker, take_snapshot
from ctxkeep.daemon.context.levels import (
    RECENT_FILE_MESSAGES, STRATEGY, Change, plan_file_summaries, plan_prune, preserved_seqs,
    prune_candidates,
)
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.context.estimator import Estimate, Estimator
from ctxkeep.daemon.backends.protocol import ModelBackend
from ctxkeep.daemon.store.records import ActiveContext, CompactionRecord, MessageRecord, SessionRecord
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.store.store import StoreError
from ctxkeep.daemon.store.writer import landed
from ctxkeep.daemon.context.usage import Budget, measure, reply_room
from ctxkeep.daemon.store.records import View

log = logging.getLogger(__name__)

#: After a pass the whole context should be at most this share of the window.
PASS_TARGET = 0.8
#: Extra level-3 steps a pass may take to reach PASS_TARGET.
EXTRA_CHECKPOINTS = 3


@dataclass
class Pass:
    """One automatic compaction pass: one snapshot, taken before its first change."""

    reason: str
    #: The last messages this pass keeps (None: keep_recent_messages). A prompt that must
    #: fit may take the recent ones too, two at a time, before it is refused.
    keep_recent: int | None = None
    #: Past levels 1-3: the context is still too large, so the user's share may be
    #: summarized below half the budget (shown as such) rather than stay over target.
    extra: bool = False
    snapshot_id: str = ""
    levels: list[int] = field(default_factory=list)


@dataclass
class AutoCompactor(Checkpointing):
    """Runs inside a session's job (the queue runs one at a time), so it never interleaves
    with other work of that session."""

    store: Store
    bus: EventBus
    backend: ModelBackend
    config: Config
    estimator: Estimator
    announcer: Announcer
    #: Stored messages' word counts, for level 2's BM25.
    terms: relevance.TermCache = field(default_factory=relevance.TermCache)

    def thresholds(self, session: SessionRecord) -> list[float]:
        return session.thresholds or self.config.compaction_thresholds

    def enabled(self, session: SessionRecord) -> bool:
        return self.config.auto_compaction if session.auto_compaction is None else session.auto_compaction

    def load(self, session_id: str) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        return self.store.history.view(session_id)

    def fill(self, session: SessionRecord, budget: Budget) -> float:
        """The fill that may trigger a lossy level: the estimate lowered by its possible
        error."""
        return budget.lowered_fill

    def level_for(self, session: SessionRecord, budget: Budget) -> int:
        fill = self.fill(session, budget)
        return max((i + 1 for i, t in enumerate(self.thresholds(session)) if fill >= t), default=0)

    def total(self, session: SessionRecord, context: ActiveContext, active: list[MessageRecord]) -> int:
        """The context as it would be sent now, estimated."""
        return self.estimator.context(session, context, active)

    # -- entry points ------------------------------------------------------------

    async def after_turn(self, session_id: str, view: View | None = None) -> None:
        """A pass when the budget crossed a threshold, respecting the cooldown (`view`:
        the session as the turn left it, else read)."""
        session, context, active = view or self.load(session_id)
        if not self.enabled(session):
            return
        level = self.level_for(session, measure(session, context, active, self.estimator, self.config))
        cooling = context.last_auto_at >= 0 and \
            session.message_count - context.last_auto_at < self.config.compaction_cooldown
        if level and not cooling:
            await self.compact(session_id, Pass("threshold crossed"))

    async def before_send(self, session_id: str, user: MessageRecord, pass_: Pass) -> None:
        """Run `pass_` (cooldown or not) when the prompt plus the reply room would not fit;
        the caller rolls it back if the turn then fails (even part-way through the pass)."""
        session, context, active = self.load(session_id)
        if not self.enabled(session) or self.fits(session, context, active, user):
            return
        await self.compact(session_id, pass_, user)

    async def roll_back(self, session_id: str, pass_: Pass) -> None:
        """Undo a pass made for a prompt that was then not answered (refused by the window
        or the server, failed, cancelled): a turn that fails changes nothing."""
        if not pass_.snapshot_id:
            return
        _, snapshot = await self.store.off_loop(self.store.snapshots.restore, session_id,
                                                pass_.snapshot_id, undo=True)
        self.bus.publish(SnapshotRestored(snapshot=snapshot.info()), session_id)
        await self.announcer.prompt_changed(session_id)
        self.announcer.changed(session_id)

    def fits(self, session: SessionRecord, context: ActiveContext, active: list[MessageRecord],
             user: MessageRecord) -> bool:
        return self.fits_estimate(session, self.estimator.context_estimate(session, context, active, user))

    def fits_estimate(self, session: SessionRecord, prompt: Estimate) -> bool:
        """Whether a prompt of this estimate, raised by its error, leaves the reply room."""
        room = reply_room(self.config, session.window)
        return self.estimator.raised(session.model, prompt) + room <= session.window

    def needed(self, level: int, pass_: Pass, user: MessageRecord | None, session: SessionRecord,
               context: ActiveContext, active: list[MessageRecord]) -> bool:
        """Whether a pass should run `level` now. A pass for a prompt that must fit runs
        until it fits and, once it changed anything, until the context is at most 80 %
        of the window less recall's share (so the next turn does not start over at once,
        and recall has its room)."""
        budget = measure(session, context, active, self.estimator, self.config)
        over_target = self.total(session, context, active) > PASS_TARGET * session.window - budget.reserved
        if user is not None:
            return not self.fits(session, context, active, user) or bool(pass_.levels) and over_target
        if level < 3:
            return self.fill(session, budget) >= self.thresholds(session)[level - 1]
        return self.level_for(session, budget) >= 3 or over_target

    async def compact(self, session_id: str, pass_: Pass, user: MessageRecord | None = None) -> None:
        """Levels 1, 2, 3 in turn, each only while still needed; then more level-3 steps
        (checkpoints, aging) while the context stays above the level-3 threshold or
        80 % of the window (for a prompt that must fit: until it fits)."""
        for level in (1, 2, 3):
            if self.needed(level, pass_, user, *self.load(session_id)):
                await self.run(session_id, level, pass_)
        pass_.extra = True
        for step in range(EXTRA_CHECKPOINTS):
            if not self.needed(3, pass_, user, *self.load(session_id)):
                return
            if user is not None:
                pass_.keep_recent = max(1, self.config.keep_recent_messages - 2 * (step + 1))
            if not await self.run(session_id, 3, pass_) and user is None:
                return

    # -- one level -----------------------------------------------------------------

    async def run(self, session_id: str, level: int, pass_: Pass) -> bool:
        """Run one level: exactly one compaction.request and one compaction.result.
        True when it changed the context."""
        session, context, active = self.load(session_id)
        before = self.total(session, context, active)
        cid = secrets.token_hex(6)
        self.bus.publish(CompactionRequest(compaction_id=cid, requested_by=f"auto ({pass_.reason})",
                                           tokens_before=before, messages=len(active),
                                           level=level, strategy=STRATEGY[level]), session_id)
        status, note, after = "failed", "", before
        try:
            budget = measure(session, context, active, self.estimator, self.config)
            change = await {1: self._files, 2: self._prune, 3: self._checkpoint}[level](
                session, context, active, budget, pass_)
            if isinstance(change, str):
                status, note = "skipped", change
                return False
            new = msgspec.structs.replace(context, seqs=change.seqs, checkpoints=change.checkpoints,
                                          file_summaries=change.file_summaries)
            after = self.total(session, new, [m for m in active if m.seq in set(change.seqs)])
            if after >= before:
                note = (f"it would not shrink the context ({before:,} → ~{after:,} tokens): "
                        "nothing was changed")
                after = before
                return False
            cancelled = await self._commit(session, context, change, level, pass_, before, after)
            status, note = "ok", change.note
            pass_.levels.append(level)
            for kind, message in change.warnings:
                self.bus.publish(ContextWarning(kind=kind, message=message), session_id)
            if cancelled:  # it landed before the cancel could stop it: say so, then stop
                raise asyncio.CancelledError
            return True
        except asyncio.CancelledError:
            if status != "ok":
                note = "cancelled"
            raise
        except (RequestError, SummaryRejected, StoreError) as exc:
            note = str(exc)
            return False
        except Exception as exc:  # noqa: BLE001 - a bug must still end the compaction
            log.exception("session=%s automatic compaction level %d failed", session_id, level)
            note = f"internal error ({exc!r}): see the daemon's log"
            return False
        finally:
            self._result(cid, session_id, status, level, note, before, after)
            if status == "ok":
                self.announcer.compacted(session_id)

    async def _commit(self, session: SessionRecord, context: ActiveContext, change: Change,
                      level: int, pass_: Pass, before: int, after: int) -> bool:
        """Snapshot (once per pass), then the new state, its audit record and the new
        estimate in one transaction, by the writer thread; the cooldown restarts. Returns
        whether a cancel came while the change was being committed (it landed)."""
        if not pass_.snapshot_id:
            reason = f"before compaction (automatic: {pass_.reason})"
            pass_.snapshot_id = await take_snapshot(self.store, self.bus, session.id, reason,
                                                    self.config.snapshots_kept)
        gone = [s for s in context.seqs if s not in set(change.seqs)]

        def update(c: ActiveContext, record: SessionRecord) -> None:
            c.seqs, c.file_summaries, c.checkpoints = change.seqs, change.file_summaries, change.checkpoints
            c.last_auto_at = record.message_count
            record.compactions += 1
            record.token_count, record.tokens_exact = after, False
        audit = CompactionRecord(time=time.time(), level=level, strategy=STRATEGY[level],
                                 tokens_before=before, tokens_after=after, tokens_freed=before - after,
                                 summarized=gone, kept=change.seqs, summary_seq=-1, model=session.model,
                                 requested_by="auto", reason=change.note)
        _, cancelled = await landed(self.store.off_loop(
            self.store.context.update, session.id, update, expected=context.seqs, audit=audit))
        return cancelled

    def _result(self, cid: str, session_id: str, status: str, level: int, reason: str,
                before: int, after: int) -> None:
        marker = compaction_marker(before, after, level) if status == "ok" else ""
        self.bus.publish(CompactionResult(
            compaction_id=cid, status=status, reason=reason, tokens_before=before,  # type: ignore[arg-type]
            tokens_after=after, tokens_freed=max(0, before - after), level=level,
            strategy=STRATEGY[level], marker=marker), session_id)
        log.info("session=%s auto compaction level %d %s %s", session_id, level, status, reason or marker)

    def _keep_recent(self, pass_: Pass) -> int:
        return self.config.keep_recent_messages if pass_.keep_recent is None else pass_.keep_recent

    def _preserved(self, context: ActiveContext, active: list[MessageRecord], pass_: Pass) -> set[int]:
        return preserved_seqs(context, active, self._keep_recent(pass_), self.config.preserve_user_messages)

    # -- level 1: file references to summaries ---------------------------------------

    async def _files(self, session, context, active, budget, pass_) -> Change | str:
        seqs = plan_file_summaries(context, active)
        if not seqs:
            return "no full file references unused in the last 3 messages"
        return Change(list(context.seqs), [*context.file_summaries, *seqs], list(context.checkpoints),
                      f"{len(seqs)} message(s) now show their files as summaries")

    # -- level 2: prune low-relevance messages --------------------------------------

    async def _prune(self, session, context, active, budget, pass_) -> Change | str:
        candidates = prune_candidates(context, active, self._preserved(context, active, pass_))
        if len(candidates) < 2:
            return "no older messages outside the preserved ones"
        scores = await relevance.score(candidates, active[-RECENT_FILE_MESSAGES:], backend=self.backend,
                                       store=self.store, embed_model=self.config.embed_model,
                                       terms=self.terms, session_id=session.id)
        pruned = plan_prune(candidates, scores)
        return Change([s for s in context.seqs if s not in pruned],
                      [s for s in context.file_summaries if s not in pruned], list(context.checkpoints),
                      f"{len(pruned)} low-relevance message(s) left the active context")

    # -- level 3: checkpoint, aging, the user's share ----------------------------------
