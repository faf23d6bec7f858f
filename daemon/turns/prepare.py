"""A turn's first step: from the session as read once to the request ready to send.

The window's facts recorded (/api/show), the prompt estimated, a question that cannot
fit refused before anything is compacted, the pass that makes room when automatic
compaction is on, the passages recalled into the room left, and the reply room."""

import logging
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ctxkeep.daemon.compaction.automatic import AutoCompactor
from ctxkeep.daemon.compaction.passes import Pass
from ctxkeep.daemon.compaction.planner import preserved_seqs
from ctxkeep.daemon.context.content import prompt_content
from ctxkeep.daemon.context.estimator import Estimate, Estimator
from ctxkeep.daemon.context.features import Vector, add, json_features
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.prompt import TurnPrompts, build_messages
from ctxkeep.daemon.context.usage import measure, reply_room
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.recall.recalled import NONE as NO_RECALL
from ctxkeep.daemon.recall.recalled import Recall
from ctxkeep.daemon.recall.recaller import Recaller
from ctxkeep.daemon.recall.room import KEPT_MESSAGES, NOTHING, REACH_SHARE, Movable, bounded, movable
from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.store.prompt_count import Anchor
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View
from ctxkeep.daemon.tokens import text_features
from ctxkeep.daemon.turns.limits import answer_room, floor_view, judged, refuse_impossible
from ctxkeep.daemon.turns.question import Question
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationRecalled

log = logging.getLogger("ctxkeep.daemon.turns.generation")

#: The fewest tokens a continue may still write.
MIN_CONTINUATION = 16
#: The reading bound never takes recall below this many of its passages (their mean size)
#: for a message that speaks of the user's past ("what is my locker code?"), and below
#: about its best exchange for any other (a new request on an old topic: every passage more
#: is read anew each turn, and the next turn reads this one's answer again).
READ_FLOOR = 3
READ_FLOOR_OTHER = 2


def read_floor(message: str) -> int:
    """The fewest passages the reading bound leaves a turn whose new message is `message`."""
    return READ_FLOOR if select.about_the_past(message) else READ_FLOOR_OTHER


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


class Turn(NamedTuple):
    """A turn as it is sent: the session as read once (as compaction left it), the
    prompt's features and estimate, what it recalled, the messages and options of the
    request."""

    view: View
    features: Vector
    estimate: Estimate
    recall: Recall
    messages: list[dict[str, Any]]
    options: dict[str, Any]


@dataclass
class Preparer:
    """Builds each turn's request."""

    parts: Parts
    auto: AutoCompactor
    recaller: Recaller
    #: Turn prompts, built on from each session's previous one.
    prompts: TurnPrompts

    async def prepare(self, generation_id: str, view: View, question: Question, compacted: Pass,
                      tools: list | None = None, prefill: str = "") -> Turn:
        """The turn's request. The question's commit is started (and its announcement
        awaited) before anything that changes the context; `compacted` is the pass made
        to fit the prompt, which the caller takes back if the turn fails; `tools`, the tool
        definitions the request carries, count in its estimate. With `prefill`, the answer
        the model goes on from (a continue): the prompt ends with it as the model's own
        unfinished message, counted in the prompt (the window holds the whole answer)."""
        estimator = self.parts.estimator
        if view.active and view.active[-1].tool_calls and question.record.role != "tool":
            raise RequestError(ErrorCode.INVALID_ARGUMENT, "the answer before this message called tools: "
                                                           "send what they returned (`tool_results`) first")
        view = view._replace(session=await self._window(view.session))
        offered = add(json_features(tools), text_features(prefill)) if prefill else json_features(tools)
        features = add(estimator.context_features(*view, question.record), offered)
        if not self.auto.fits_estimate(view.session, estimator.of_features(view.session, features)):
            view = await self._counted(view, question.record, features, tools)
        if not self.auto.fits_estimate(view.session, estimator.of_features(view.session, features)):
            user = await question.settled()
            view, floor = await self._floor(view, user, tools)
            refuse_impossible(self.parts, view, user, floor)  # before any compaction
            compacted.offered = offered
            view = await self.auto.before_send(view, user, compacted)
            features = add(estimator.context_features(*view, user), offered)
            if not self.auto.fits_estimate(view.session, estimator.of_features(view.session, features)):
                view = await self._counted(view, user, features, tools)  # compacted: fits by its count?
        estimate = estimator.of_features(view.session, features)
        if question.record.role != "tool" and not prefill:  # tool results ask nothing; a continue recalled
            view, features, recall, estimate = await self._recall(view, question.record, features, estimate,
                                                                  compacted, offered)
        else:
            recall = NO_RECALL
        session = view.session
        if recall.block or recall.cut:
            self.parts.bus.publish(GenerationRecalled(
                generation_id=generation_id, tokens=recall.tokens, by_meaning=recall.semantic,
                recalled=recall.shown(), found_tokens=recall.found or recall.tokens, cut=recall.cut,
                memory_tokens=recall.memory_tokens), session.id)
        room = answer_room(self.parts, session, estimate, self.auto.enabled(session))
        messages = self.prompts.build(*view, question.record, recall.block)
        if prefill:  # the answer so far (in the prompt, so counted in the room the window leaves)
            if room < MIN_CONTINUATION:
                raise RequestError(ErrorCode.CONTEXT_OVERFLOW, "the window leaves the answer no room to go on: "
                                   "compact (`ctxkeep compact`), or ask for the rest in a new message")
            messages.append({"role": "assistant", "content": prefill})
        options = {**session.options, "num_ctx": session.window, "num_predict": room}
        return Turn(view, features, estimate, recall, messages, options)

    async def _counted(self, view: View, user: MessageRecord, features: Vector, tools: list | None) -> View:
        """The view with its session anchored on the model server's own count of the prompt,
        where the server can say it before the prompt is sent (backends/openai_count.py): a
        prompt the estimate says will not fit, but might, is measured before anything is
        compacted or refused, and the count calibrates the estimates (so a fresh store's
        first turn is measured, not guessed)."""
        guessed = self.parts.estimator.of_features(view.session, features)
        exact = await self._measured(view.session, self.prompts.build(*view, user), features, guessed, tools)
        return view if exact is None else await self._anchored(view, exact, features)

    async def _floor(self, view: View, user: MessageRecord, tools: list | None) -> tuple[View, int | None]:
        """The model server's count of the least the prompt can be (limits.floor_view: the
        system prompt, goals, pins and the question), where the estimate cannot say whether
        it fits, with the view anchored on it (so that what compaction adds back is all
        that is estimated); else (the view, None): the estimate decides."""
        estimator = self.parts.estimator
        session, least = view.session, floor_view(self.parts, view)
        features = add(estimator.context_features(*least, user), json_features(tools))
        guessed = estimator.unanchored(session.model, features)
        if judged(self.parts, session.model, guessed)[0] + reply_room(self.parts.config, session) \
                <= session.window:
            return view, None  # it fits by the estimate
        exact = await self._measured(session, build_messages(*least, user), features, guessed, tools)
        return (view, None) if exact is None else (await self._anchored(view, exact, features), exact)

    async def _anchored(self, view: View, exact: int, features: Vector) -> View:
        """The view with its session anchored on `exact`, the count of a prompt of `features`."""
        store = self.parts.store

        def anchor(r: SessionRecord) -> None:
            r.anchor = Anchor(tokens=exact, features=list(features), model=r.model)
        return view._replace(session=await store.off_loop(store.sessions.update, view.session.id, anchor))

    async def _measured(self, session: SessionRecord, messages: list, features: Vector, guessed: Estimate,
                        tools: list | None) -> int | None:
        """The server's count of `messages` (None where it cannot say before reading them,
        or where even the estimate's lower bound cannot fit), learnt by the estimator."""
        estimator = self.parts.estimator
        if estimator.lowered(session.model, guessed) + reply_room(self.parts.config, session) > session.window:
            return None  # it cannot fit even by the estimate's lower bound: nothing to ask
        if any(m.get("images") for m in messages):
            return None  # what an image costs is the server's to say only as it reads it
        exact = await self.parts.backend.count_prompt(session.model, messages, tools,
                                                      {**session.options, "num_ctx": session.window})
        if exact is None:
            return None
        log.info("session=%s: the server counts the prompt %d tokens (estimated %d)", session.id, exact,
                 guessed.tokens)
        estimator.save(estimator.observe(session, features, exact, guessed))
        return exact

    async def _window(self, session: SessionRecord) -> SessionRecord:
        """The session with its model's context_length, size and vision (from /api/show) recorded."""
        facts = await self.parts.backend.facts(session.model)
        vision = "vision" in facts.capabilities
        if (facts.context_length and facts.context_length != session.context_length) or \
                facts.parameter_size != session.parameter_size or vision != session.vision:
            def record(r: SessionRecord) -> None:
                r.context_length = facts.context_length or r.context_length
                r.parameter_size = facts.parameter_size
                r.vision = vision
            window = session.window
            store = self.parts.store
            session = await store.off_loop(store.sessions.update, session.id, record)
            if session.window != window:  # the model allows less than num_ctx: a new window
                self.parts.announcer.changed(session.id)
        return session

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

    async def _recall(self, view: View, user: MessageRecord, features: Vector, estimate: Estimate,
                      compacted: Pass, offered: Vector) -> tuple[View, Vector, Recall, Estimate]:
        """What the prompt recalls, and the view, features and estimate of the prompt with
        it: within what the window leaves beside the prompt and the reply room (so recall
        never makes a prompt compact or not fit: a block that would not fit with its own
        allowance is asked again, smaller), up to its cap — and, when the message reaches
        into the past, in the room of the oldest verbatim exchanges too, which then leave
        the active context with this turn (`compacted` undoes that if the turn fails)."""
        recall, estimate = await self._recalled(view, user, features, estimate, self._movable(view))
        if not recall.displaced:
            return view, features, recall, estimate
        view = await self.auto.displace(view, recall.displaced, compacted)
        estimator = self.parts.estimator
        features = add(estimator.context_features(*view, user), offered)
        recall, estimate = await self._recalled(view, user, features, estimator.of_features(view.session, features))
        return view, features, recall, estimate

    async def _recalled(self, view: View, user: MessageRecord, features: Vector, estimate: Estimate,
                        moving: Movable = NOTHING) -> tuple[Recall, Estimate]:
        """Recall within the room the prompt leaves (and the room of `moving`), bounded by
        the reading speed (`recall_read_seconds`) but never below its best few passages
        (`read_floor`); a cut is said in the recall (`found`, `cut`)."""
        session = view.session
        estimator, config = self.parts.estimator, self.parts.config
        slow = self.parts.announcer.recall_read(session.model)  # new text every turn, read whole
        budget = measure(*view, estimator, config, slow)
        if slow is not None:  # the last block made the server read its exchange anew: that shares
            slow = max(slow // 2, slow - displaced_by_recall(view, estimator))  # the bound (half kept)
        reserve = reply_room(config, session)
        raised, margin = estimator.raised(session.model, estimate), estimator.margin(session.model)
        cap = self.recaller.cap(session, budget.available + budget.reserved)
        room = self.recaller.room(session.window, reserve, raised, cap, margin)
        whole = self.recaller.room(session.window, reserve, raised, session.window, margin)
        reach = max(cap, int(REACH_SHARE * (budget.available + budget.reserved)))
        found, recall = await self._fitted(view, user, features, estimate, room, whole, bounded(moving, reach - room))
        if slow is None or found.tokens <= slow or not found.block:
            return found, recall
        found_passages = max(1, len(found.passages) + len(found.remembered))
        least = min(room, max(slow, read_floor(user.content) * found.tokens // found_passages))
        kept, with_kept = await self._fitted(view, user, features, estimate, least, least,
                                             bounded(moving, max(0, least - room)))
        cut = (f"the reading bound (recall_read_seconds = {config.recall_read_seconds:g}: ~{slow:,} tokens at "
               f"this machine's reading speed) kept ~{kept.tokens:,} of ~{found.tokens:,} tokens found")
        log.info("session=%s recall: %s", session.id, cut)
        return replace(kept, found=found.tokens, cut="; ".join(filter(None, [cut, kept.cut]))), with_kept

    async def _fitted(self, view: View, user: MessageRecord, features: Vector, estimate: Estimate,
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
                recall = await self.recaller.recall(*view, user, room, whole, moving)
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
