"""Automatic graduated compaction (seeds 001 and 002).

The conversation's budget is window − reply room − system − goals/pins −
checkpoints; usage is the conversation's tokens over it. Checked after every
turn (with a cooldown of 2 messages) and before every prompt is sent (then
regardless of the cooldown, until the prompt fits):

- level 1 (50 %), `file_compress`: full @file references not used in the last
  3 messages are shown as their summaries;
- level 2 (65 %), `message_prune`: older messages outside the preserved set
  are scored for relevance to the recent turns (BM25, plus embeddings when
  Ollama has the model); the more relevant half stays, the rest leaves the
  active context (never the history);
- level 3 (80 %), `checkpoint`: older messages become a new checkpoint (a
  goal-aware summary); existing checkpoints age — recent, old, ancient,
  merged — each step re-compressed smaller.

Never compressed: the system prompt, the goal record, pinned messages, user
messages (by default) and the last messages. When the preserved messages
alone pass half the budget, the oldest user messages are folded, verbatim,
into a checkpoint, with a warning. A snapshot is taken before every change.
"""

import asyncio
import logging
import math
import secrets
import time
from dataclasses import dataclass

from ..protocol.events import CompactionRequest, CompactionResult, ContextWarning
from . import relevance
from .bus import EventBus
from .compaction import ContextEvents, Summarizer, SummaryRejected, instructions_for
from .config import Config
from .estimator import Estimator
from .ollama_backend import ModelCallError, OllamaBackend
from .prompt import AGE_SYSTEM, CHECKPOINT_SYSTEM, build_messages
from .records import ActiveContext, Checkpoint, MessageRecord, SessionRecord
from .store import ContextChanged, Store, StoreError
from .usage import Budget, measure

log = logging.getLogger(__name__)

STRATEGY = {1: "file_compress", 2: "message_prune", 3: "checkpoint"}
AGES = ("recent", "old", "ancient", "merged")
#: Each age's target size, as a share of the budget without checkpoints (seed 002's
#: ~2000 / 1200 / 800 / 400 tokens of a 6,800-token budget, scaled to the window).
AGE_SHARE = {"recent": 0.15, "old": 0.09, "ancient": 0.06, "merged": 0.03}
RECENT_FILE_MESSAGES = 3


class CannotFit(Exception):
    """Even after every level the prompt does not fit the window."""


@dataclass
class AutoCompactor:
    """Runs inside a session's job (its lock held), so it never interleaves with other work."""

    store: Store
    bus: EventBus
    backend: OllamaBackend
    config: Config
    estimator: Estimator

    @property
    def events(self) -> ContextEvents:
        return ContextEvents(self.store, self.bus, self.estimator, self.config)

    def thresholds(self, session: SessionRecord) -> list[float]:
        return session.thresholds or self.config.compaction_thresholds

    def enabled(self, session: SessionRecord) -> bool:
        return self.config.auto_compaction if session.auto_compaction is None else session.auto_compaction

    def load(self, session_id: str) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        session = self.store.session(session_id)
        context = self.store.context(session_id)
        return session, context, self.store.messages(session_id, context.seqs)

    def level_for(self, session: SessionRecord, budget: Budget) -> int:
        crossed = [i + 1 for i, t in enumerate(self.thresholds(session)) if budget.fill >= t]
        return max(crossed, default=0)

    # -- entry points ------------------------------------------------------------

    async def after_turn(self, session_id: str) -> None:
        """Compact when the budget crossed a threshold, respecting the cooldown."""
        session, context, active = self.load(session_id)
        if not self.enabled(session):
            return
        level = self.level_for(session, measure(session, context, active, self.estimator, self.config))
        cooling = context.last_auto_at >= 0 and \
            session.message_count - context.last_auto_at < self.config.compaction_cooldown
        if level and not cooling:
            await self.compact_to_fit(session_id, level)

    async def before_send(self, session_id: str, user: MessageRecord) -> None:
        """Compact (cooldown or not) until the prompt plus the reply room fits the window;
        once anything was compacted, on until the context is at most 80 % of the window."""
        compacted = fits = False
        for level in (1, 2, 3, 3, 3):
            session, context, active = self.load(session_id)
            prompt = self.estimator.prompt(session.model, build_messages(session, context, active, user))
            b = measure(session, context, active, self.estimator, self.config)
            fits = prompt + b.reply <= session.window
            if fits and (not compacted or b.total <= 0.8 * session.window):
                return
            if not self.enabled(session):
                return  # the caller refuses the overflowing prompt
            compacted = await self.run(session_id, level, reason="the next prompt would not fit") or compacted
        if not fits:
            raise CannotFit("even after compaction the prompt does not fit the window")

    async def compact_to_fit(self, session_id: str, level: int) -> None:
        """Run `level`; then level 3 (checkpoint, aging) while the conversation is still at
        the level-3 threshold or the whole context above 80 % of the window, up to 3 times."""
        await self.run(session_id, level, reason="threshold crossed")
        for _ in range(3):
            session, context, active = self.load(session_id)
            b = measure(session, context, active, self.estimator, self.config)
            if self.level_for(session, b) < 3 and b.total <= 0.8 * session.window:
                return
            if not await self.run(session_id, 3, reason="still over the level-3 threshold or 80 % of the window"):
                return

    # -- one level -----------------------------------------------------------------

    async def run(self, session_id: str, level: int, reason: str) -> bool:
        """Run one level; publishes compaction.request/result. True when it changed something."""
        session, context, active = self.load(session_id)
        before = measure(session, context, active, self.estimator, self.config)
        cid = secrets.token_hex(6)
        self.bus.publish(CompactionRequest(compaction_id=cid, requested_by=f"auto ({reason})",
                                           tokens_before=before.total, messages=len(active),
                                           level=level, strategy=STRATEGY[level]), session_id)
        try:
            changed, note = await {1: self._files, 2: self._prune, 3: self._checkpoint}[level](
                session, context, active, before)
        except (ModelCallError, SummaryRejected, ContextChanged, StoreError) as exc:
            self._result(cid, session_id, "failed", level, str(exc), before.total, before.total)
            return False
        except asyncio.CancelledError:
            self._result(cid, session_id, "failed", level, "cancelled", before.total, before.total)
            raise
        session, context, active = self.load(session_id)
        after = measure(session, context, active, self.estimator, self.config)
        if not changed:
            self._result(cid, session_id, "skipped", level, note, before.total, before.total)
            return False
        session = self.store.update_session(session_id, lambda r: setattr(r, "token_count", after.total))
        freed = max(0, before.total - after.total)
        marker = (f"── compacted (level {level}, {STRATEGY[level]}): {before.total:,} → "
                  f"~{after.total:,} tokens ({freed:,} freed) ──")
        self._result(cid, session_id, "ok", level, note, before.total, after.total, marker=marker)
        self.events.changed(session, context)
        return True

    def _result(self, cid: str, session_id: str, status: str, level: int, reason: str,
                before: int, after: int, marker: str = "") -> None:
        self.bus.publish(CompactionResult(
            compaction_id=cid, status=status, reason=reason, tokens_before=before,  # type: ignore[arg-type]
            tokens_after=after, tokens_freed=max(0, before - after), level=level,
            strategy=STRATEGY[level], marker=marker), session_id)
        log.info("session=%s auto compaction level %d %s %s", session_id, level, status, reason or marker)

    def _apply(self, session: SessionRecord, expected: list[int], level: int, change) -> None:
        """Snapshot, then change the context state in one transaction (the cooldown restarts)."""
        self.events.snapshot(session.id, f"before compaction level {level}")

        def update(context: ActiveContext, record: SessionRecord) -> None:
            change(context)
            context.last_auto_at = record.message_count
            record.compactions += 1
            record.tokens_exact = False
        self.store.update_context(session.id, update, expected=expected)

    def _preserved(self, context: ActiveContext, active: list[MessageRecord]) -> set[int]:
        return preserved_seqs(context, active, self.config.keep_recent_messages,
                              self.config.preserve_user_messages)

    # -- level 1: file references to summaries ---------------------------------------

    async def _files(self, session, context, active, budget) -> tuple[bool, str]:
        seqs = plan_file_summaries(context, active)
        if not seqs:
            return False, "no full file references unused in the last 3 messages"
        self._apply(session, context.seqs, 1, lambda c: c.file_summaries.extend(seqs))
        return True, f"{len(seqs)} message(s) now show their files as summaries"

    # -- level 2: prune low-relevance messages --------------------------------------

    async def _prune(self, session, context, active, budget) -> tuple[bool, str]:
        candidates = prune_candidates(context, active, self._preserved(context, active))
        if len(candidates) < 2:
            return False, "no older messages outside the preserved ones"
        scores = await relevance.score(candidates, active[-RECENT_FILE_MESSAGES:], backend=self.backend,
                                       store=self.store, embed_model=self.config.embed_model)
        pruned = plan_prune(candidates, scores)

        def change(c: ActiveContext) -> None:
            c.seqs = [s for s in c.seqs if s not in pruned]
            c.file_summaries = [s for s in c.file_summaries if s not in pruned]
        self._apply(session, context.seqs, 2, change)
        return True, f"{len(pruned)} low-relevance message(s) left the active context"

    # -- level 3: checkpoint, aging, fold --------------------------------------------

    def _target(self, budget: Budget, age: str) -> int:
        base = budget.window - budget.reply - budget.system - budget.goals
        return max(48, int(base * AGE_SHARE[age]))

    async def _checkpoint(self, session, context, active, budget) -> tuple[bool, str]:
        preserved = self._preserved(context, active)
        older = [m for m in active if m.seq not in preserved]
        summarizer = await Summarizer.for_model(
            self.backend, self.estimator,
            session.compaction_model or self.config.compaction_model or session.model,
            session.num_ctx, self.config.summary_max_tokens)
        instructions = instructions_for(context)
        checkpoints = [c for c in context.checkpoints]
        notes = []
        if older:
            room = min(summarizer.room, self._target(budget, "recent"))
            text, tokens = await summarizer.summarize(summarizer.chunks(older), CHECKPOINT_SYSTEM,
                                                      instructions, room=room)
            original = sum(self.estimator.message(session.model, m.content) for m in older)
            if tokens >= original:  # too little to gain: leave them, age what is there
                notes.append(f"{len(older)} older message(s) too short to summarize")
                older = []
            else:
                checkpoints = await self._age(checkpoints, budget, summarizer, instructions)
                checkpoints.append(Checkpoint(
                    id=secrets.token_hex(4), first_seq=older[0].seq, last_seq=older[-1].seq,
                    summary=text, original_tokens=original, current_tokens=tokens,
                    key_decisions=[d.description for d in context.goals.decisions if d.locked],
                    files=sorted({f.path for m in older for f in m.files if not f.error}),
                    next_steps=list(context.goals.next_steps), created=time.time()))
                notes.append(f"{len(older)} message(s) became a checkpoint")
        folded = self._fold(session.model, context, active, budget, preserved)
        if folded:
            quoted = "\n".join(f"User (verbatim): {m.content}" for m in folded)
            checkpoints.append(Checkpoint(
                id=secrets.token_hex(4), first_seq=folded[0].seq, last_seq=folded[-1].seq,
                summary=quoted, original_tokens=self.estimator.text(session.model, quoted),
                current_tokens=self.estimator.text(session.model, quoted), created=time.time(),
                verbatim=True))
            checkpoints.sort(key=lambda c: c.first_seq)
            message = (f"{len(folded)} of the oldest user messages were folded, quoted verbatim, "
                       "into a checkpoint: the preserved messages alone passed half the budget")
            self.bus.publish(ContextWarning(kind="fold", message=message), session.id)
            notes.append(message)
        if not older and not folded:
            if not checkpoints:
                return False, "; ".join(notes) or "nothing outside the preserved messages to summarize"
            aged = await self._age(checkpoints, budget, summarizer, instructions)
            if [c.current_tokens for c in aged] == [c.current_tokens for c in checkpoints] and \
                    len(aged) == len(checkpoints) and [c.age for c in aged] == [c.age for c in checkpoints]:
                return False, "; ".join(notes) or "checkpoints are as small as they get"
            checkpoints = aged
            notes.append("checkpoints aged")
        gone = {m.seq for m in older} | {m.seq for m in folded}

        def change(c: ActiveContext) -> None:
            c.seqs = [s for s in c.seqs if s not in gone]
            c.file_summaries = [s for s in c.file_summaries if s not in gone]
            c.checkpoints = checkpoints
        self._apply(session, context.seqs, 3, change)
        return True, "; ".join(notes)

    def _fold(self, model: str, context: ActiveContext, active: list[MessageRecord], budget: Budget,
              preserved: set[int]) -> list[MessageRecord]:
        """The oldest user messages to fold when the preserved ones pass half the budget."""
        model_tokens = {m.seq: self.estimator.message(model, m.prompt_content()) for m in active}
        keep_recent = {m.seq for m in active[-self.config.keep_recent_messages:]}
        total = sum(model_tokens[s] for s in preserved if s in model_tokens)
        base = budget.window - budget.reply - budget.system - budget.goals - budget.checkpoints
        if total <= base / 2:
            return []
        folded = []
        for m in active:
            if total <= base * 0.4:
                break
            if m.role == "user" and m.seq not in keep_recent and m.seq not in context.pinned:
                folded.append(m)
                total -= model_tokens[m.seq]
        return folded

    async def _age(self, checkpoints: list[Checkpoint], budget: Budget, summarizer: Summarizer,
                   instructions: str) -> list[Checkpoint]:
        """Each existing checkpoint one age older, re-compressed to that age's size; the
        ancient ones merged into one."""
        aged = []
        for c in checkpoints:
            age = AGES[min(AGES.index(c.age) + 1, len(AGES) - 1)]
            aged.append(await self._shrink(c, age, self._target(budget, age), summarizer, instructions))
        ancient = [c for c in aged if c.age in ("ancient", "merged")]
        if len(ancient) > 1:
            merged_text = "\n\n".join(c.summary for c in ancient)
            merged = Checkpoint(
                id=secrets.token_hex(4), age="merged", first_seq=ancient[0].first_seq,
                last_seq=ancient[-1].last_seq, summary=merged_text,
                original_tokens=sum(c.original_tokens for c in ancient),
                current_tokens=sum(c.current_tokens for c in ancient),
                compressions=max(c.compressions for c in ancient),
                key_decisions=sorted({d for c in ancient for d in c.key_decisions}),
                files=sorted({f for c in ancient for f in c.files}),
                next_steps=ancient[-1].next_steps, created=ancient[0].created)
            merged = await self._shrink(merged, "merged", self._target(budget, "merged"),
                                        summarizer, instructions, force=True)
            aged = [merged] + [c for c in aged if c not in ancient]
        return aged

    async def _shrink(self, c: Checkpoint, age: str, target: int, summarizer: Summarizer,
                      instructions: str, force: bool = False) -> Checkpoint:
        if c.current_tokens <= target and not force:
            return Checkpoint(**{**_fields(c), "age": age})
        text, tokens = await summarizer.call(
            AGE_SYSTEM, instructions + f"\n\nAt most about {target} tokens.", c.summary,
            "Summary to shorten:", room=target)
        if tokens >= c.current_tokens:  # no gain: keep the longer one rather than lose detail
            return Checkpoint(**{**_fields(c), "age": age})
        return Checkpoint(**{**_fields(c), "age": age, "summary": text, "current_tokens": tokens,
                             "compressions": c.compressions + 1, "verbatim": False})


def preserved_seqs(context: ActiveContext, active: list[MessageRecord], keep_recent: int,
                   preserve_user: bool) -> set[int]:
    """Messages no automatic compaction touches: the last ones, pinned ones, user ones."""
    keep = {m.seq for m in active[-keep_recent:]} | set(context.pinned)
    if preserve_user:
        keep |= {m.seq for m in active if m.role == "user"}
    return keep


def plan_file_summaries(context: ActiveContext, active: list[MessageRecord]) -> list[int]:
    """Level 1: messages whose full @file references were not used in the last 3 messages."""
    recent = {f.path for m in active[-RECENT_FILE_MESSAGES:] for f in m.files}
    pinned, done = set(context.pinned), set(context.file_summaries)
    return [m.seq for m in active if m.seq not in pinned and m.seq not in done
            and any(f.summary and f.path not in recent for f in m.files)]


def prune_candidates(context: ActiveContext, active: list[MessageRecord],
                     preserved: set[int]) -> list[MessageRecord]:
    """Level 2: the messages that may leave the active context."""
    return [m for m in active if m.seq not in preserved and m.kind == "message"]


def plan_prune(candidates: list[MessageRecord], scores: list[float]) -> set[int]:
    """Level 2: keep the more relevant half; the rest leaves the active context."""
    ranked = sorted(zip(scores, range(len(candidates))), reverse=True)
    keep = {candidates[i].seq for _, i in ranked[:math.ceil(len(candidates) / 2)]}
    return {m.seq for m in candidates if m.seq not in keep}


def _fields(c: Checkpoint) -> dict:
    return {f: getattr(c, f) for f in c.__struct_fields__}
