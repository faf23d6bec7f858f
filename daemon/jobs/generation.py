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
from dataclasses import dataclass
from typing import NamedTuple

import msgspec

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import (
    GenerationError, GenerationThinking, GenerationToken, GoalUpdated, QueryReceived,
    ResponseGeneration,
)
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.announce import Announcer
from ctxkeep.daemon.context.autocompact import AutoCompactor
from ctxkeep.daemon.server.batcher import TextBatcher
from ctxkeep.daemon.server.bus import EventBus
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.jobs.queue import Job, SessionJobs
from ctxkeep.daemon.models.protocol import ModelBackend
from ctxkeep.daemon.context.prompt import build_messages
from ctxkeep.daemon.context.features import Vector
from ctxkeep.daemon.context.view import View
from ctxkeep.daemon.store.records import (
    ActiveContext, Attachment, MessageRecord, NewMessage, SessionRecord,
)
from ctxkeep.daemon.store.protocol import SessionStore
from ctxkeep.daemon.store.store import StoreError
from ctxkeep.daemon.context.usage import reply_room

log = logging.getLogger(__name__)


class Turn(NamedTuple):
    """A turn as it is sent: the session as read once, the question, the prompt's features
    and estimate."""

    session: SessionRecord
    context: ActiveContext
    active: list[MessageRecord]
    user: MessageRecord
    features: Vector
    estimate: int


@dataclass
class Generations:
    """Accepts user turns and runs them through the session job queue."""

    store: SessionStore
    bus: EventBus
    backend: ModelBackend
    config: Config
    jobs: SessionJobs
    estimator: Estimator
    auto: AutoCompactor
    announcer: Announcer

    async def accept(self, session: SessionRecord, text: str, think: bool | None,
                     files: list[Attachment]) -> tuple[Job, int, MessageRecord]:
        """Store the question (committed and synced, off the event loop: `accepted` means
        stored), then queue its turn. Returns the job, how many jobs are ahead of it, and
        the stored question."""
        _, (user,) = await self.store.append_async(
            session.id, [NewMessage(role="user", content=text, files=files)], pending=True)
        job = Job(session_id=session.id, kind="generation",
                  body=lambda j: self._execute(j, user, think),
                  fail=lambda j, code, message: self._interrupted(j, user, code, message, "", ""))
        return job, self.jobs.submit(job), user

    async def _execute(self, job: Job, user: MessageRecord, think: bool | None) -> None:
        sid = job.session_id
        session, context, active = self.store.view(sid)  # read once; each step passes it on
        self.bus.publish(QueryReceived(generation_id=job.id, message=user.info(),
                                       model=session.model), sid)
        answer: list[str] = []
        thinking: list[str] = []
        interval = self.config.token_batch_ms / 1000.0
        tokens = TextBatcher(interval, lambda i, text: self.bus.publish(
            GenerationToken(generation_id=job.id, index=i, text=text), sid))
        thoughts = TextBatcher(interval, lambda i, text: self.bus.publish(
            GenerationThinking(generation_id=job.id, index=i, text=text), sid))
        try:
            session = await self._window(session)
            features = self.estimator.context_features(session, context, active, user)
            compacted = None
            if not self.auto.fits_estimate(session, self.estimator.estimate(session.model, features)):
                self._refuse_impossible(session, context, user)  # before any compaction
                compacted = await self.auto.before_send(sid, user)
                session, context, active = self.store.view(sid)
                features = self.estimator.context_features(session, context, active, user)
            estimate = self.estimator.estimate(session.model, features)
            try:
                room = self._reply_room(session, estimate)
            except RequestError:
                if compacted is not None:  # it did not help: a refused send changes nothing
                    self.auto.roll_back(sid, compacted)
                raise
            messages = build_messages(session, context, active, user)
            options = {**session.options, "num_ctx": session.window, "num_predict": room}
            final = None
            async for chunk in self.backend.stream_chat(session.model, messages, options, think):
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
            view = await self._complete(job, Turn(session, context, active, user, features, estimate),
                                        "".join(answer), "".join(thinking), final)
        except asyncio.CancelledError:
            self._fail(job, user, *job.cancel_reason, answer, thinking, tokens, thoughts)
            return
        except RequestError as exc:  # a ModelCallError too
            self._fail(job, user, exc.code, exc.message, answer, thinking, tokens, thoughts)
            return
        except StoreError as exc:
            self._fail(job, user, exc.code, f"could not store the answer: {exc}",
                       answer, thinking, tokens, thoughts)
            return
        except Exception as exc:  # noqa: BLE001 - a bug still ends the turn, with its answer marked
            log.exception("session=%s generation=%s failed", sid, job.id)
            self._fail(job, user, ErrorCode.INTERNAL,
                       f"internal error ({exc!r}): see the daemon's log, and report it",
                       answer, thinking, tokens, thoughts)
            return
        try:  # the answer is stored and announced; now keep the context within its budget
            await self.auto.after_turn(sid, view)
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - each level already published its own result
            log.exception("session=%s automatic compaction after the turn failed", sid)

    def _refuse_impossible(self, session: SessionRecord, context: ActiveContext,
                           user: MessageRecord) -> None:
        """Refuse a question that cannot fit however much is compacted: the system prompt,
        goals, pins and the question itself, plus the reply room, over the window."""
        floor_context = msgspec.structs.replace(context, seqs=[], checkpoints=[])
        pinned = self.store.messages(session.id, context.pinned)
        floor = self.estimator.raised(session.model, self.estimator.context(
            session, floor_context, pinned, user))
        room = reply_room(self.config, session.window)
        if floor + room > session.window:
            mine = self.estimator.message(session.model, user.prompt_content())
            raise RequestError(
                ErrorCode.CONTEXT_OVERFLOW,
                f"this message is about {mine:,} tokens; with the system prompt, goals and pins "
                f"the prompt cannot be smaller than about {floor:,} tokens, and the window of "
                f"{session.window:,} must keep {room:,} for the answer. Nothing was compacted or "
                f"sent: send less (@file:summary instead of the whole file), or raise num_ctx "
                f"(`ctxkeep set {session.name} --num-ctx N`)")

    def _reply_room(self, session: SessionRecord, estimate: int) -> int:
        """num_predict for this prompt: all the room the window leaves (at most what the
        session's own num_predict allows), never less than the reserved reply room, so
        that prompt plus answer always fit and Ollama never shifts or cuts the context."""
        room = session.window - self.estimator.raised(session.model, estimate)
        reserve = reply_room(self.config, session.window)
        if room < reserve:
            compacted = self.auto.enabled(session)
            advice = ("send less (@file:summary instead of a whole file), or raise num_ctx "
                      f"(`ctxkeep set {session.name} --num-ctx N`)" if compacted else
                      f"compact the session (`ctxkeep compact {session.name}`), raise num_ctx, "
                      "or send less")
            raise RequestError(
                ErrorCode.CONTEXT_OVERFLOW,
                f"the prompt would be about {estimate:,} tokens, leaving {max(room, 0):,} of the "
                f"window of {session.window:,} for the answer (at least {reserve:,} are kept)"
                f"{', even with the context compacted as far as it goes' if compacted else ''}. "
                f"Nothing was sent and the context is as it was: {advice}")
        wanted = session.options.get("num_predict")
        if isinstance(wanted, int) and wanted > 0:
            room = min(room, wanted)
        return room

    async def _window(self, session: SessionRecord) -> SessionRecord:
        """The session with its model's context_length and size (from /api/show) recorded."""
        facts = await self.backend.facts(session.model)
        if (facts.context_length and facts.context_length != session.context_length) or \
                facts.parameter_size != session.parameter_size:
            def record(r: SessionRecord) -> None:
                r.context_length = facts.context_length or r.context_length
                r.parameter_size = facts.parameter_size
            window = session.window
            session = self.store.update_session(session.id, record)
            if session.window != window:  # the model allows less than num_ctx: a new window
                self.announcer.changed(session.id)
        return session

    async def _complete(self, job: Job, turn: "Turn", answer: str, thinking: str,
                        final) -> View:
        """Store the answer with all it changed (calibration, goals, the count) in one
        commit, end the job, announce; returns the session as it now is."""
        session, context, active, user = turn.session, turn.context, turn.active, turn.user
        token_count = int(final.prompt_eval_count or 0)
        eval_count = int(final.eval_count or 0)
        window = session.window
        # Ollama cut the prompt anyway (an old server ignoring `truncate`): it reports at
        # most the window, or far fewer tokens than the calibrated estimate.
        truncated = token_count >= window or (
            self.estimator.calibrated(session.model) and token_count < 0.7 * turn.estimate)
        calibration = self.estimator.observe(session.model, turn.features, token_count,
                                             turn.estimate, [(answer, eval_count)], persist=False)
        reply = NewMessage(role="assistant", content=answer, thinking=thinking,
                           model=session.model, eval_count=eval_count, reply_to=user.seq)
        goals = goal_markers.apply_markers(context.goals, answer)
        count, exact = token_count, True
        if goals is not None:  # what the model sees changed after the count: an estimate
            changed = msgspec.structs.replace(context, goals=goals)
            count, exact = self.estimator.context(session, changed, [*active, user, reply.record(-1, 0.0)]), False
        write = asyncio.ensure_future(self.store.append_async(
            session.id, [reply], activate_seqs=[user.seq], activate=[0], token_count=count,
            exact=exact, answered=[user.seq], calibration=(session.model, calibration), goals=goals))
        try:
            session, (assistant,) = await asyncio.shield(write)
        except asyncio.CancelledError:  # too late to cancel: the answer is being stored
            session, (assistant,) = await write
        if truncated:
            log.warning("session=%s prompt_eval_count %d (estimated %d, window %d): "
                        "Ollama may have cut the prompt", session.id, token_count, turn.estimate, window)
        job.end(ResponseGeneration(
            generation_id=job.id, message=assistant.info(), token_count=token_count,
            eval_count=eval_count, window=window, truncated=truncated, prompt_estimate=turn.estimate,
            total_duration=int(final.total_duration or 0),
            load_duration=int(final.load_duration or 0),
            prompt_eval_duration=int(final.prompt_eval_duration or 0),
            eval_duration=int(final.eval_duration or 0)))
        context = msgspec.structs.replace(context, seqs=[*context.seqs, user.seq, assistant.seq],
                                          goals=goals if goals is not None else context.goals)
        view = View(session, context, [*active, user, assistant])
        if goals is not None:
            self.bus.publish(GoalUpdated(goals=goals), session.id)
        self.announcer.changed(session.id, view=view)
        log.info("session=%s generation=%s done: %d prompt tokens (estimated %d), %d answer tokens",
                 session.id, job.id, token_count, turn.estimate, eval_count)
        return view

    def _fail(self, job: Job, user: MessageRecord, code: ErrorCode, message: str,
              answer: list[str], thinking: list[str], *batchers: TextBatcher) -> None:
        for batcher in batchers:
            batcher.flush()
        if job.ended:  # the answer was stored and announced; what failed came after it
            log.error("session=%s generation=%s failed after its answer: %s", job.session_id,
                      job.id, message)
            return
        job.end(self._interrupted(job, user, code, message, "".join(answer), "".join(thinking)))

    def _interrupted(self, job: Job, user: MessageRecord, code: ErrorCode, message: str,
                     partial: str, thinking: str) -> GenerationError:
        """Keep what there is of the answer, marked interrupted; the terminal error event."""
        stored_seq = -1
        try:
            _, (record,) = self.store.append(job.session_id, [NewMessage(
                role="assistant", content=partial, thinking=thinking, status="interrupted",
                error=code.value, reply_to=user.seq)], answered=[user.seq])
            stored_seq = record.seq
        except StoreError as exc:
            log.error("session=%s could not keep the interrupted answer: %s", job.session_id, exc)
        log.log(logging.INFO if code == ErrorCode.CANCELLED else logging.WARNING,
                "session=%s generation=%s %s: %s", job.session_id, job.id, code.value, message)
        return GenerationError(generation_id=job.id, code=code.value, message=message,
                               partial=partial, stored_seq=stored_seq)
