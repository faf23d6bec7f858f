"""A turn's first step: from the session as read once to the request ready to send.

The window's facts recorded (/api/show), the prompt estimated, a question that cannot
fit refused before anything is compacted, the pass that makes room when automatic
compaction is on, the passages recalled into the room left (turn_recall.py), and the
reply room."""

import logging
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ctxkeep.daemon.compaction.automatic import AutoCompactor
from ctxkeep.daemon.compaction.passes import Pass
from ctxkeep.daemon.context.estimator import Estimate
from ctxkeep.daemon.context.features import Vector, add, json_features
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.prompt import TurnPrompts, build_messages
from ctxkeep.daemon.context.usage import reply_room
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.recall.recalled import NONE as NO_RECALL
from ctxkeep.daemon.recall.recalled import Recall
from ctxkeep.daemon.recall.recaller import Recaller
from ctxkeep.daemon.store.prompt_count import Anchor
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View
from ctxkeep.daemon.tokens import text_features
from ctxkeep.daemon.turns.limits import answer_room, floor_view, judged, refuse_impossible
from ctxkeep.daemon.turns.question import Question
from ctxkeep.daemon.turns.turn_recall import TurnRecall
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationRecalled

log = logging.getLogger("ctxkeep.daemon.turns.generation")

#: The fewest tokens a continue may still write.
MIN_CONTINUATION = 16


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
    #: Each turn's recall, fitted to the room its prompt leaves.
    recalling: TurnRecall = field(init=False)

    def __post_init__(self) -> None:
        self.recalling = TurnRecall(self.parts, self.auto, self.recaller)

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
        estimate = estimator.of_features(view.session, features)
        if not self.auto.fits_estimate(view.session, estimate):
            view = await self._counted(view, question.record, features, tools)
            estimate = estimator.of_features(view.session, features)
        if not self.auto.fits_estimate(view.session, estimate):
            user = await question.settled()
            view, floor = await self._floor(view, user, tools)
            refuse_impossible(self.parts, view, user, floor)  # before any compaction
            compacted.offered = offered
            view = await self.auto.before_send(view, user, compacted)
            features = add(estimator.context_features(*view, user), offered)
            estimate = estimator.of_features(view.session, features)
            if not self.auto.fits_estimate(view.session, estimate):
                view = await self._counted(view, user, features, tools)  # compacted: fits by its count?
                estimate = estimator.of_features(view.session, features)
        if question.record.role != "tool" and not prefill:  # tool results ask nothing; a continue recalled
            view, features, recall, estimate = await self.recalling.recall(view, question.record, features, estimate,
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
