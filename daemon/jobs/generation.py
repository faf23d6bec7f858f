"""Generations: one user turn through the model, streamed out as events.

The question is stored (and synced) before `accepted` goes out, queued or
not; the answer after the call, and only then do both join the active
context. A prompt that, with its estimate raised by the estimator's measured
error, leaves less than the reserved reply room is never sent: the turn ends
with `context_overflow` (decided before any compaction when no compaction
could make it fit). `num_predict` is what the window leaves, so prompt plus
answer always fit and Ollama never cuts or shifts the context. A failure or
cancel leaves the active context as it was, keeps any partial answer in
history marked `interrupted`, and ends with one `generation.error`. Each
completed turn calibrates the token estimator.
"""

import asyncio
import logging
from dataclasses import dataclass, field
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import msgspec

from ctxkeep.protocol.structs import RecalledPassage
from ctxkeep.protocol.events import (
    GenerationRecalled, GenerationThinking, GenerationToken, GoalUpdated, QueryReceived,
    ResponseGeneration,
)
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.announce import Announcer
from ctxkeep.daemon.context.autocompact import AutoCompactor, Pass
from ctxkeep.daemon.events.batcher import TextBatcher
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.calibration import repetitive
from ctxkeep.daemon.context.estimator import SLACK, Estimate, Estimator
from ctxkeep.daemon.jobs import waiting
from ctxkeep.daemon.jobs.deferred import Deferred
from ctxkeep.daemon.jobs.endings import TurnEndings, Withdrawn
from ctxkeep.daemon.jobs.limits import TurnLimits
from ctxkeep.daemon.jobs.queue import Job, SessionJobs
from ctxkeep.daemon.backends.protocol import ModelBackend
from ctxkeep.daemon.context.prompt import TurnPrompts
from ctxkeep.daemon.context.features import Vector, add
from ctxkeep.daemon.context.usage import measure, reply_room
from ctxkeep.daemon.recall.recaller import NONE as NO_RECALL, Recall, Recaller
from ctxkeep.daemon.store.records import View
from ctxkeep.daemon.store.records import (
    ActiveContext, Attachment, MessageRecord, NewMessage, SessionRecord,
)
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.store.writer import landed

log = logging.getLogger(__name__)

#: The longest a question's commit waits for its model request to be out (building a
#: request of many thousands of messages takes the ollama package longer).
SENT_WAIT_S = 0.02


async def _chain(first: "asyncio.Future", rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The stream whose first chunk was already asked for."""
    yield await first
    async for chunk in rest:
        yield chunk


class Turn(NamedTuple):
    """A turn as it is sent: the session as read once, the question, the prompt's features
    and estimate."""

    session: SessionRecord
    context: ActiveContext
    active: list[MessageRecord]
    user: MessageRecord
    features: Vector
    estimate: Estimate
    recall: Recall


@dataclass
class Generations(TurnEndings, TurnLimits):
    """Accepts user turns and runs them through the session job queue."""

    store: Store
    bus: EventBus
    backend: ModelBackend
    config: Config
    jobs: SessionJobs
    estimator: Estimator
    auto: AutoCompactor
    announcer: Announcer
    recaller: Recaller
    #: Turn prompts, built on from each session's previous one.
    prompts: TurnPrompts = field(default_factory=TurnPrompts)

    async def accept(self, session: SessionRecord, text: str, think: bool | None,
                     files: list[Attachment]) -> tuple[Job, int, MessageRecord]:
        """Store the question (committed and synced: `accepted` means stored) and queue its
        turn. A turn that can start at once builds its prompt and sends its model request
        first, then has the question committed (in the writer thread, while the model
        works); a queued one's question is committed at once. Nothing of the turn is
        published before the commit returns. If the commit fails, the turn is withdrawn
        (no event: no client was told of it) and the error raised. Returns the job, how
        many jobs are ahead of it, and the stored question."""
        question = NewMessage(role="user", content=text, files=files)
        commit = Deferred(lambda: self.store.history.append_async(session.id, [question], pending=True))
        job = Job(session_id=session.id, kind="generation",
                  body=lambda j: self._execute(j, commit, question.record(-1, 0.0), think),
                  fail=lambda j, code, message: self._failed(j, commit.start(), code, message))
        ahead = self.jobs.submit(job, announce=False)  # busy once accepted: below
        stored = commit.start() if ahead else commit.future
        try:
            _, (user,) = await asyncio.shield(stored)
        except BaseException:
            self.jobs.withdraw(job)
            raise
        if ahead == 0:  # after the model request went out (published events wake threads)
            self.jobs.announce_busy(session.id)
        return job, ahead, user

    async def _execute(self, job: Job, commit: "Deferred", user: MessageRecord,
                       think: bool | None) -> None:
        """The turn: `user` is the question as it will be stored, until `commit` says how
        it was; the commit starts once the model request is out, or before anything that
        waits (a call to /api/show, a compaction, a failure)."""
        sid = job.session_id
        session, context, active = self.store.history.view(sid)  # read once; each step passes it on
        if self.backend.known_facts(session.model) is None:
            commit.start()  # /api/show is asked first: `accepted` does not wait for it

        async def question() -> MessageRecord:
            """The question once stored, announced (`query.received`) once."""
            nonlocal user
            if user.seq < 0:
                stored_user = await self._settled_question(commit.start())
                if stored_user is None:
                    raise Withdrawn
                user = stored_user
                self.bus.publish(QueryReceived(generation_id=job.id, message=user.info(),
                                               model=session.model), sid)
            return user
        answer: list[str] = []
        thinking: list[str] = []
        interval = self.config.token_batch_ms / 1000.0
        tokens = TextBatcher(interval, lambda i, text: self.bus.publish(
            GenerationToken(generation_id=job.id, index=i, text=text), sid))
        thoughts = TextBatcher(interval, lambda i, text: self.bus.publish(
            GenerationThinking(generation_id=job.id, index=i, text=text), sid))
        compacted = Pass("the next prompt would not fit")  # taken back if the turn fails
        try:
            session = await self._window(session)
            features = self.estimator.context_features(session, context, active, user)
            if not self.auto.fits_estimate(session, self.estimator.of_features(session, features)):
                user = await question()
                self._refuse_impossible(session, context, user)  # before any compaction
                await self.auto.before_send(sid, user, compacted)
                session, context, active = self.store.history.view(sid)
                features = self.estimator.context_features(session, context, active, user)
            estimate = self.estimator.of_features(session, features)
            recall, estimate = await self._recall(session, context, active, user, features, estimate)
            if recall.block:
                self.bus.publish(GenerationRecalled(
                    generation_id=job.id, tokens=recall.tokens, by_meaning=recall.semantic,
                    recalled=[RecalledPassage(seq=p.seq, part=p.part, parts=p.parts, role=p.role,  # type: ignore[arg-type]
                                              created=p.created, text=p.text) for p in recall.passages]), sid)
            room = self._reply_room(session, estimate)
            messages = self.prompts.build(session, context, active, user, recall.block)
            options = {**session.options, "num_ctx": session.window, "num_predict": room}
            final = None
            # the request goes out from `first`; the question's commit starts the moment it
            # is out (the backend calls back), else when `first` ends, or soon at the latest
            stream = self.backend.stream_chat(session.model, messages, options, think,
                                              on_sent=commit.start)
            first = asyncio.ensure_future(anext(stream))
            try:
                await asyncio.wait([first, commit.future], timeout=SENT_WAIT_S,
                                   return_when=asyncio.FIRST_COMPLETED)
                commit.start()
                user = await question()
                await waiting.first_chunk(
                    first, self.backend, session.model, job.id, self.config.first_token_timeout,
                    lambda event: self.bus.publish(event, sid))
            except BaseException:
                first.cancel()
                raise
            async for chunk in _chain(first, stream):
                if chunk.message.thinking:
                    thinking.append(chunk.message.thinking)
                    thoughts.add(chunk.message.thinking)
                if chunk.message.content:
                    answer.append(chunk.message.content)
                    tokens.add(chunk.message.content)
                if chunk.done:
                    final = chunk
            thoughts.flush()
            tokens.flush()
            assert final is not None  # stream_chat raises when the final chunk is missing
            view = await self._complete(job, Turn(session, context, active, user, features, estimate,
                                                  recall), "".join(answer), "".join(thinking), final)
        except Withdrawn:
            return  # the question could not be stored: no client was told of this turn
        except BaseException as exc:  # noqa: BLE001 - every ending ends the turn once
            try:
                user = await question()  # stopped beside the question's commit: wait for it
            except Withdrawn:
                return
            if not job.ended:
                await self._take_back(sid, compacted)
            self._fail_with(job, user, exc, answer, thinking, tokens, thoughts)
            if not isinstance(exc, (Exception, asyncio.CancelledError)):
                raise
            return
        if view is None:
            return
        try:  # the answer is stored and announced; now keep the context within its budget
            await self.auto.after_turn(sid, view)
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - each level already published its own result
            log.exception("session=%s automatic compaction after the turn failed", sid)

    async def _recall(self, session: SessionRecord, context: ActiveContext, active: list[MessageRecord],
                      user: MessageRecord, features: Vector, estimate: Estimate) -> tuple[Recall, Estimate]:
        """What the prompt recalls, and the prompt's estimate with it: within what the window
        leaves beside the prompt and the reply room (so recall never makes a prompt compact
        or not fit: a block that would not fit with its own allowance is asked again,
        smaller), up to its cap."""
        budget = measure(session, context, active, self.estimator, self.config)
        reserve = reply_room(self.config, session.window)
        room = self.recaller.room(session.window, reserve, self.estimator.raised(session.model, estimate),
                                  self.recaller.cap(session, budget.available + budget.reserved),
                                  self.estimator.margin(session.model))
        for _ in range(3):
            try:
                recall = await self.recaller.recall(session, context, active, user, room)
            except Exception:  # noqa: BLE001 - a turn goes on without recall rather than fail
                log.exception("session=%s recall failed: the turn goes on without it", session.id)
                return NO_RECALL, estimate
            if not recall.block:
                return NO_RECALL, estimate
            with_recall = self.estimator.of_features(session, features, recall.features)
            over = self.estimator.raised(session.model, with_recall) + reserve - session.window
            if over <= 0:
                return recall, with_recall
            room -= max(over * 2, 32)
        return NO_RECALL, estimate

    async def _take_back(self, session_id: str, compacted: Pass) -> None:
        """A turn that fails changes nothing: the pass made for its prompt is undone."""
        try:
            await asyncio.shield(self.auto.roll_back(session_id, compacted))
        except Exception:  # noqa: BLE001 - the turn's own failure is what it reports
            log.exception("session=%s could not take back the compaction made for a failed "
                          "turn (`ctxkeep undo` does it)", session_id)

    async def _window(self, session: SessionRecord) -> SessionRecord:
        """The session with its model's context_length and size (from /api/show) recorded."""
        facts = await self.backend.facts(session.model)
        if (facts.context_length and facts.context_length != session.context_length) or \
                facts.parameter_size != session.parameter_size:
            def record(r: SessionRecord) -> None:
                r.context_length = facts.context_length or r.context_length
                r.parameter_size = facts.parameter_size
            window = session.window
            session = await self.store.off_loop(self.store.sessions.update, session.id, record)
            if session.window != window:  # the model allows less than num_ctx: a new window
                self.announcer.changed(session.id)
        return session

    async def _complete(self, job: Job, turn: "Turn", answer: str, thinking: str,
                        final) -> View | None:
        """Store the answer with all it changed (calibration, goals, the count) in one
        commit, end the job, announce; returns the session as it now is (None when the
        turn was cancelled while its answer was being stored: too late, it completes, but
        no compaction follows)."""
        session, context, active, user = turn.session, turn.context, turn.active, turn.user
        token_count = int(final.prompt_eval_count or 0)
        eval_count = int(final.eval_count or 0)
        window = session.window
        # Ollama cut the prompt anyway (an old server ignoring `truncate`): it reports at
        # most the window, or far fewer tokens than the calibrated estimate.
        # far fewer tokens than the estimate allows for: Ollama cut the prompt after all
        lowest = turn.estimate.tokens - 2 * self.estimator.allowance(session.model, turn.estimate) - SLACK
        truncated = token_count >= window or (self.estimator.calibrated(session.model)
                                              and token_count < lowest)
        # a count of a prompt Ollama cut is not the count of the prompt sent: not learnt,
        # not an anchor
        sent = add(turn.features, turn.recall.features)  # the prompt as sent, its recall block in
        calibrations = [] if truncated else self.estimator.observe(
            session, sent, token_count, turn.estimate, [(answer, eval_count)],
            repeated=repetitive(user.prompt_content()))
        reply = NewMessage(role="assistant", content=answer, thinking=thinking,
                           model=session.model, eval_count=eval_count, reply_to=user.seq,
                           recalled=turn.recall.seqs)
        goals = goal_markers.apply_markers(context.goals, answer)
        count, exact = token_count, True
        if goals is not None:  # what the model sees changed after the count: an estimate
            changed = msgspec.structs.replace(context, goals=goals)
            count, exact = self.estimator.context(session, changed, [*active, user, reply.record(-1, 0.0)]), False
        # too late to cancel once the answer is being stored: it lands
        (session, (assistant,)), cancelled = await landed(self.store.history.append_async(
            session.id, [reply], activate_seqs=[user.seq], activate=[0], token_count=count,
            exact=exact, answered=[user.seq], calibrations=calibrations, goals=goals,
            anchor=None if truncated else (token_count, list(sent), session.model,
                                           list(turn.recall.features)),
            recalled_tokens=turn.recall.tokens))
        if truncated:
            log.warning("session=%s prompt_eval_count %d (estimated %d, window %d): "
                        "Ollama may have cut the prompt", session.id, token_count, turn.estimate.tokens, window)
        job.end(ResponseGeneration(
            generation_id=job.id, message=assistant.info(), token_count=token_count,
            eval_count=eval_count, window=window, truncated=truncated,
            prompt_estimate=turn.estimate.tokens,
            total_duration=int(final.total_duration or 0),
            load_duration=int(final.load_duration or 0),
            prompt_eval_duration=int(final.prompt_eval_duration or 0),
            eval_duration=int(final.eval_duration or 0)))
        self.estimator.weights(session.model)  # refit now, not on the next turn's way out
        self.recaller.stored(session.id)  # its index (when kept) takes the turn in
        context = msgspec.structs.replace(context, seqs=[*context.seqs, user.seq, assistant.seq],
                                          goals=goals if goals is not None else context.goals)
        view = View(session, context, [*active, user, assistant])
        if goals is not None:
            self.bus.publish(GoalUpdated(goals=goals), session.id)
        self.announcer.changed(session.id, view=view)
        log.info("session=%s generation=%s done: %d prompt tokens (estimated %d), %d answer tokens",
                 session.id, job.id, token_count, turn.estimate.tokens, eval_count)
        return None if cancelled else view
