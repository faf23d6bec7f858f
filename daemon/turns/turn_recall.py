"""A turn's recall within the room its prompt leaves: what the window leaves beside the
prompt and the reply room, bounded by the model's reading speed on this machine
(`recall_read_seconds`) but never below the best few passages, and — when the new message
reaches into the past — the room of the oldest verbatim exchanges too (recall/room.py)."""

import logging
from dataclasses import dataclass, replace

from ctxkeep.daemon.compaction.automatic import AutoCompactor
from ctxkeep.daemon.compaction.passes import Pass
from ctxkeep.daemon.compaction.planner import preserved_seqs
from ctxkeep.daemon.context.content import prompt_content
from ctxkeep.daemon.context.estimator import Estimate, Estimator
from ctxkeep.daemon.context.features import Vector, add
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.usage import measure, reply_room
from ctxkeep.daemon.recall.asked import Asked
from ctxkeep.daemon.recall.recalled import NONE as NO_RECALL
from ctxkeep.daemon.recall.recalled import Recall
from ctxkeep.daemon.recall.recaller import Recaller
from ctxkeep.daemon.recall.room import KEPT_MESSAGES, NOTHING, REACH_SHARE, Movable, bounded, movable
from ctxkeep.daemon.retrieval import asking
from ctxkeep.daemon.store.records import MessageRecord, View

log = logging.getLogger("ctxkeep.daemon.turns.generation")

#: The reading bound never takes recall below this many of its passages (their mean size)
#: for a message that speaks of the user's past ("what is my locker code?"), and below
#: about its best exchange for any other (a new request on an old topic: every passage more
#: is read anew each turn, and the next turn reads this one's answer again).
READ_FLOOR = 3
READ_FLOOR_OTHER = 2


def read_floor(message: str) -> int:
    """The fewest passages the reading bound leaves a turn whose new message is `message`."""
    return READ_FLOOR if asking.about_the_past(message) else READ_FLOOR_OTHER


def displaced_by_recall(view: View, estimator: Estimator) -> int:
    """Estimated tokens the next prompt makes the server read again because the last
    prompt's recall block followed its user message: the server's cache ends where that
    block began, so the answer after the message is read anew. 0 when the last prompt had
    no block, or the prompt changed since it was counted (a compaction: it is read anew
    whatever recall does)."""
    session, _, active = view
    if not (session.count.recalled and session.count.exact):
        return 0
    start = next((i for i in range(len(active) - 1, -1, -1) if active[i].role == "user"), len(active))
    return sum(estimator.message(session.model, prompt_content(m)) for m in active[start + 1:])


@dataclass
class TurnRecall:
    """Recall for each turn's prompt, fitted to its room."""

    parts: Parts
    auto: AutoCompactor
    recaller: Recaller

    def _movable(self, view: View) -> Movable:
        """The oldest verbatim exchanges recall may take the room of (none where automatic
        compaction is off: the user keeps the active context as it is)."""
        session, context, active = view
        if not self.auto.enabled(session):
            return NOTHING
        config, estimator = self.parts.config, self.parts.estimator
        protected = preserved_seqs(context, active, min(config.keep_recent_messages, KEPT_MESSAGES), False)
        return movable(active, protected | set(context.pinned),
                       lambda m: estimator.message(session.model, prompt_content(m)))

    async def recall(self, view: View, user: MessageRecord, features: Vector, estimate: Estimate,
                      compacted: Pass, offered: Vector) -> tuple[View, Vector, Recall, Estimate]:
        """What the prompt recalls, and the view, features and estimate of the prompt with
        it: within what the window leaves beside the prompt and the reply room (so recall
        never makes a prompt compact or not fit: a block that would not fit with its own
        allowance is asked again, smaller), up to its cap — and, when the message reaches
        into the past, in the room of the oldest verbatim exchanges too, which then leave
        the active context with this turn (`compacted` undoes that if the turn fails)."""
        try:
            asked = await self.recaller.ask(*view, user)
        except Exception:  # a turn goes on without recall rather than fail
            log.exception("session=%s recall failed: the turn goes on without it", view.session.id)
            return view, features, NO_RECALL, estimate
        if asked is None:  # nothing it could bring: its room is not worked out
            return view, features, NO_RECALL, estimate
        recall, estimate = await self._recalled(view, asked, features, estimate, self._movable(view))
        if not recall.displaced:
            return view, features, recall, estimate
        view = await self.auto.displace(view, recall.displaced, compacted)
        estimator = self.parts.estimator
        features = add(estimator.context_features(*view, user), offered)
        recall, estimate = await self._recalled(view, asked, features, estimator.of_features(view.session, features),
                                                reaching=True)
        return view, features, recall, estimate

    async def _recalled(self, view: View, asked: Asked, features: Vector, estimate: Estimate,
                        moving: Movable = NOTHING, reaching: bool = False) -> tuple[Recall, Estimate]:
        """Recall within the room the prompt leaves (and the room of `moving`), bounded by
        the reading speed (`recall_read_seconds`) but never below its best few passages
        (`read_floor`); a cut is said in the recall (`found`, `cut`). `reaching`: the message
        reaches into the past and older exchanges made room for it, so recall's cap is the
        reach's (REACH_SHARE), not the everyday one."""
        session, user = view.session, asked.user
        estimator, config = self.parts.estimator, self.parts.config
        slow = self.parts.announcer.recall_read(session.model)  # new text every turn, read whole
        budget = measure(*view, estimator, config, slow)
        if slow is not None:  # the last block made the server read its exchange anew: that shares
            slow = max(slow // 2, slow - displaced_by_recall(view, estimator))  # the bound (half kept)
        reserve = reply_room(config, session)
        raised, margin = estimator.raised(session.model, estimate), estimator.margin(session.model)
        cap = self.recaller.cap(session, budget.available + budget.reserved)
        reach = max(cap, int(REACH_SHARE * (budget.available + budget.reserved)))
        room = self.recaller.room(session.window, reserve, raised, reach if reaching else cap, margin)
        whole = self.recaller.room(session.window, reserve, raised, session.window, margin)
        moving = bounded(moving, reach - room)
        found, recall = await self._fitted(view, asked, features, estimate, room, whole, moving)
        found_passages = max(1, len(found.passages) + len(found.remembered))
        if slow is None or found.tokens <= slow or not found.block or found_passages <= read_floor(user.content):
            return found, recall  # within the bound, or no more than the best few it keeps
        least = min(room + moving.tokens, max(slow, read_floor(user.content) * found.tokens // found_passages))
        while True:  # the best passages may be longer than the average: widened until one fits
            kept, with_kept = await self._fitted(view, asked, features, estimate, min(least, room), min(least, whole),
                                                 bounded(moving, least - room))
            if kept.block or least >= found.tokens:
                break
            least = min(found.tokens, 2 * least)
        if not kept.block:
            return found, recall
        cut = (f"the reading bound (recall_read_seconds = {config.recall_read_seconds:g}: ~{slow:,} tokens at "
               f"this machine's reading speed) kept ~{kept.tokens:,} of ~{found.tokens:,} tokens found")
        log.info("session=%s recall: %s", session.id, cut)
        return replace(kept, found=found.tokens, cut="; ".join(filter(None, [cut, kept.cut]))), with_kept

    async def _fitted(self, view: View, asked: Asked, features: Vector, estimate: Estimate,
                      room: int, whole: int, moving: Movable) -> tuple[Recall, Estimate]:
        """Recall within `room` (memory within `whole`), asked again smaller while its block
        would not fit with its own allowance."""
        session, estimator = view.session, self.parts.estimator
        reserve = reply_room(self.parts.config, session)
        log.debug("session=%s recall may take %d tokens (with memory %d; from older turns %d): the prompt is "
                  "~%d (%d uncertain, %d novel)", session.id, room, whole, moving.tokens, estimate.tokens,
                  estimate.uncertain, estimate.novel)
        for _ in range(3):
            try:
                recall = await self.recaller.recall(*view, asked, room, whole, moving)
            except Exception:  # a turn goes on without recall rather than fail
                log.exception("session=%s recall failed: the turn goes on without it", session.id)
                return NO_RECALL, estimate
            if not recall.block:  # nothing added (but maybe why: what memory found, and left out)
                return (recall if recall.cut else NO_RECALL), estimate
            if recall.displaced:
                return recall, estimate  # the caller moves them out, then asks again
            with_recall = estimator.of_features(session, features, recall.features)
            over = estimator.raised(session.model, with_recall) + reserve - session.window
            if over <= 0:
                return recall, with_recall
            room, whole = room - max(over * 2, 32), whole - max(over * 2, 32)
            moving = NOTHING
        return NO_RECALL, estimate
