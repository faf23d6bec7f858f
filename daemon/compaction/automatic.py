"""Automatic graduated compaction: level 1 shortens file contents, level 2 prunes messages,
level 3 writes checkpoints, each run when the fill passes its threshold.

The conversation's budget is window − reply room − system − goals/pins − checkpoints;
its fill is the conversation's tokens over it. Checked after every turn (with a cooldown
of 2 messages) and before every prompt is sent (then regardless of the cooldown, until
the prompt plus its reply room fits). A pass runs the levels cheapest first and stops
as soon as the fill is under the next level's threshold (for a prompt that must fit: as
soon as it fits); the fill that triggers a lossy level is the estimate lowered by the
estimator's measured error, so an over-estimate never costs the user text.

- level 1 (50 %), `file_compress`: @file references unused in the last 3 messages as
  summaries, older long tool results as head and tail, old images as their names;
- level 2 (65 %), `message_prune`: older messages outside the preserved set are scored
  for relevance to the recent turns (BM25, plus meaning by recall's vectors of them);
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
from dataclasses import dataclass, field

from ctxkeep.daemon.compaction.levels import LevelRunner
from ctxkeep.daemon.compaction.passes import (
    AFTER_ANSWER_TARGET,
    AGING_STEPS,
    ANSWER_PASS_AT,
    EXTRA_CHECKPOINTS,
    PASS_TARGET,
    Pass,
    worth_retrying,
)
from ctxkeep.daemon.context.estimator import Estimate
from ctxkeep.daemon.context.features import ZERO, Vector, add
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.usage import Budget, reply_room
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View


@dataclass
class AutoCompactor:
    """Runs inside a session's job (the queue runs one at a time), so it never interleaves
    with other work of that session. A pass reads the session once and carries it from
    level to level."""

    parts: Parts
    #: Runs each level (levels.py).
    levels: LevelRunner
    #: Sessions whose last threshold pass changed nothing: the context's tokens and messages
    #: then. The next waits for a reason (passes.worth_retrying): every pass re-reads the
    #: prompt on a CPU, and one that cannot help is not tried again at once.
    fruitless: dict[str, tuple[int, int]] = field(default_factory=dict)

    def thresholds(self, session: SessionRecord) -> list[float]:
        return session.thresholds or self.parts.config.compaction_thresholds

    def enabled(self, session: SessionRecord) -> bool:
        auto = session.auto_compaction
        return self.parts.config.auto_compaction if auto is None else auto

    def level_for(self, session: SessionRecord, budget: Budget) -> int:
        """The highest level whose threshold the fill reached (the estimate lowered by its
        possible error: an over-estimate never costs the user text)."""
        fill = budget.lowered_fill
        return max((i + 1 for i, t in enumerate(self.thresholds(session)) if fill >= t), default=0)

    def total(self, view: View) -> int:
        return self.levels.total(view)

    def budget(self, view: View) -> Budget:
        return self.levels.budget(view)

    # -- entry points ------------------------------------------------------------

    async def after_turn(self, view: View) -> None:
        """A pass when the budget crossed a threshold, respecting the cooldown (`view`:
        the session as the turn left it)."""
        session, context, _ = view
        if not self.enabled(session):
            return
        cooling = context.last_auto_at >= 0 and \
            session.message_count - context.last_auto_at < self.parts.config.compaction_cooldown
        if not self.level_for(session, self.budget(view)) or cooling:
            return
        total = self.total(view)
        if not worth_retrying(self.fruitless.get(session.id), total, session.message_count, session.window):
            return
        pass_ = Pass("threshold crossed")
        try:
            await self.compact(view, pass_)
        except asyncio.CancelledError:  # stopped (a client's cancel, a shutdown): the context as it was
            await asyncio.shield(self.roll_back(session.id, pass_))
            raise
        if pass_.levels:
            self.fruitless.pop(session.id, None)
        else:
            self.fruitless[session.id] = (total, session.message_count)

    async def before_send(self, view: View, user: MessageRecord, pass_: Pass) -> View:
        """Run `pass_` (cooldown or not) when the prompt plus the reply room would not fit;
        the caller rolls it back if the turn then fails (even part-way through the pass).
        Returns the session as the pass left it."""
        if not self.enabled(view.session) or self.fits(view, user, pass_.offered):
            return view
        return await self.compact(view, pass_, user)

    async def displace(self, view: View, seqs: tuple[int, ...], pass_: Pass) -> View:
        """The oldest verbatim messages whose room the turn's recall takes leave the active
        context (level 2's change, one compaction.request/result; undone with `pass_` when
        the turn fails). Returns the session as it left it."""
        pass_.displace, pass_.must_fit = seqs, True
        try:
            return await self.levels.run(view, 2, pass_)
        finally:
            pass_.displace = ()

    async def roll_back(self, session_id: str, pass_: Pass) -> None:
        """Undo a pass made for a prompt that was then not answered (refused by the window
        or the server, failed, cancelled): a turn that fails changes nothing."""
        if pass_.snapshot_id:
            await self.levels.applier.roll_back(session_id, pass_.snapshot_id)

    def fits(self, view: View, user: MessageRecord, offered: Vector = ZERO) -> bool:
        estimator = self.parts.estimator
        features = add(estimator.context_features(*view, user), offered)
        return self.fits_estimate(view.session, estimator.of_features(view.session, features))

    def fits_estimate(self, session: SessionRecord, prompt: Estimate) -> bool:
        """Whether a prompt of this estimate, raised by its error, leaves the reply room."""
        room = reply_room(self.parts.config, session)
        return self.parts.estimator.raised(session.model, prompt) + room <= session.window

    def needed(self, level: int, pass_: Pass, user: MessageRecord | None, view: View) -> bool:
        """Whether a pass should run `level` now. A pass for a prompt that must fit runs
        until it fits and, once it changed anything, until the context is at most 80 %
        of the window less recall's share (so the next turn does not start over at once,
        and recall has its room); after an answer, level 3 runs past the level-3 threshold or
        ANSWER_PASS_AT of the window, and a pass that made a checkpoint goes on until the
        context is at most AFTER_ANSWER_TARGET of it (fewer, larger passes)."""
        budget = self.budget(view)
        total = self.total(view)
        if user is not None:
            over_target = total > PASS_TARGET * view.session.window - budget.reserved
            return not self.fits(view, user, pass_.offered) or bool(pass_.levels) and over_target
        if level < 3:
            return budget.lowered_fill >= self.thresholds(view.session)[level - 1]
        if self.level_for(view.session, budget) >= 3 or total > ANSWER_PASS_AT * view.session.window - budget.reserved:
            return True
        # once it made a checkpoint: on to a target that leaves turns of room
        return 3 in pass_.levels and total > AFTER_ANSWER_TARGET * view.session.window - budget.reserved

    async def compact(self, view: View, pass_: Pass, user: MessageRecord | None = None) -> View:
        """Levels 1, 2, 3 in turn, each only while still needed; then more level-3 steps
        (checkpoints, aging) while the context stays above the level-3 threshold or
        80 % of the window (for a prompt that must fit: until it fits). Returns the
        session as the pass left it."""
        pass_.must_fit = user is not None
        for level in (1, 2, 3):
            if self.needed(level, pass_, user, view):
                changed = await self.levels.run(view, level, pass_)
                if level == 3 and changed is view and user is None:
                    return view  # the same step again now would be judged (and paid for) the same
                view = changed
        if user is not None and pass_.keep_tools > 1 and not self.fits(view, user, pass_.offered):
            pass_.keep_tools = 1  # the last exchanges do not fit whole beside the reply room
            view = await self.levels.run(view, 1, pass_)
        pass_.extra = True
        for step in range(EXTRA_CHECKPOINTS + (AGING_STEPS if user is not None else 0)):
            if not self.needed(3, pass_, user, view):
                break
            if user is not None:
                # the last messages too, two at a time: at the end (when showing long answers
                # as their head and tail is not enough) even the newest exchange goes into the
                # summary, and the summaries age, rather than the question be refused
                keep = max(0, self.parts.config.keep_recent_messages - 2 * (step + 1))
                if keep == 0:
                    view = await self._newest_shortened(view, user, pass_)
                    if self.fits(view, user, pass_.offered):
                        break
                pass_.keep_recent = keep
            changed = await self.levels.run(view, 3, pass_)
            if changed is view and (user is None or pass_.keep_recent == 0):
                break
            view = changed
        if user is not None and not self.fits(view, user, pass_.offered):
            view = await self._newest_shortened(view, user, pass_)
        return view

    async def _newest_shortened(self, view: View, user: MessageRecord, pass_: Pass) -> View:
        """Level 1 for the newest answers too (their head and tail), once a pass: never a
        dead end for one long answer."""
        if pass_.last_resort is not None:
            return view
        pass_.last_resort = user
        return await self.levels.run(view, 1, pass_)
