"""Generations: one user turn through the model, streamed out as events.

The user message is stored before the call; the assistant message after it,
and only then do both join the active context. A prompt estimated above the
window is never sent. A failure or cancel leaves the active context as it
was, keeps any partial answer in history marked `interrupted`, and ends with
one `generation.error`. Each completed turn calibrates the token estimator.
"""

import asyncio
import logging
from dataclasses import dataclass

from ..protocol import ErrorCode
from ..protocol.events import (
    ContextUsage, GenerationError, GenerationThinking, GenerationToken, GoalUpdated, QueryReceived,
    ResponseGeneration, SessionUpdated,
)
from . import goals as goal_markers
from .autocompact import AutoCompactor, CannotFit
from .batcher import TextBatcher
from .bus import EventBus
from .config import Config
from .estimator import Estimator, prompt_features, text_features
from .jobs import Job, SessionJobs
from .ollama_backend import ModelCallError, OllamaBackend
from .prompt import Message, build_messages
from .records import Attachment, MessageRecord, NewMessage, SessionRecord
from .store import Store, StoreError
from .usage import usage_of

log = logging.getLogger(__name__)


@dataclass
class Turn:
    """What a `send` asked for, its @file references already expanded."""

    text: str
    think: bool | None
    files: list[Attachment]


@dataclass
class Generations:
    """Runs user turns through the session job queue."""

    store: Store
    bus: EventBus
    backend: OllamaBackend
    config: Config
    jobs: SessionJobs
    estimator: Estimator
    auto: AutoCompactor

    def submit(self, session: SessionRecord, text: str, think: bool | None,
               files: list[Attachment]) -> tuple[Job, int]:
        """Queue a turn; returns its job and how many jobs of the session are ahead."""
        job = Job(session_id=session.id, kind="generation")
        turn = Turn(text=text, think=think, files=files)
        ahead = self.jobs.submit(job, lambda j: self._execute(j, turn),
                                 lambda j: self._publish_error(j, ErrorCode.CANCELLED,
                                                               "cancelled before it started", "", -1))
        return job, ahead

    async def _execute(self, job: Job, turn: Turn) -> None:
        sid = job.session_id
        try:
            session = self.store.session(sid)
            _, (user,) = self.store.append(sid, [NewMessage(role="user", content=turn.text,
                                                             files=turn.files)])
        except StoreError as exc:
            job.ended = True
            self._publish_error(job, ErrorCode.STORAGE_ERROR, str(exc), "", -1)
            return
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
            try:
                await self.auto.before_send(sid, user)
            except CannotFit:
                pass  # the estimate check below refuses it with a clear message
            session = self.store.session(sid)
            context = self.store.context(sid)
            messages = build_messages(session, context, self.store.messages(sid, context.seqs), user)
            estimate = self.estimator.prompt(session.model, messages)
            if estimate > session.window:
                raise ModelCallError(
                    ErrorCode.CONTEXT_OVERFLOW,
                    f"the prompt would be about {estimate:,} tokens, over the window of "
                    f"{session.window:,}: compact the session (`ctxkeep compact {session.name}`), "
                    "raise num_ctx, or send less")
            options = {**session.options, "num_ctx": session.window}
            final = None
            async for chunk in self.backend.stream_chat(session.model, messages, options, turn.think):
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
            self._complete(job, session, user, messages, estimate, "".join(answer),
                           "".join(thinking), final)
        except ModelCallError as exc:
            self._fail(job, exc.code, exc.message, answer, thinking, tokens, thoughts)
            return
        except asyncio.CancelledError:
            self._fail(job, ErrorCode.CANCELLED, "cancelled by a client", answer, thinking,
                       tokens, thoughts)
            return
        except StoreError as exc:
            self._fail(job, ErrorCode.STORAGE_ERROR, f"could not store the answer: {exc}",
                       answer, thinking, tokens, thoughts)
            return
        try:  # the answer is stored and announced; now keep the context within its budget
            await self.auto.after_turn(sid)
        except (ModelCallError, StoreError) as exc:
            log.warning("session=%s automatic compaction failed: %s", sid, exc)
        except asyncio.CancelledError:
            pass

    async def _window(self, session: SessionRecord) -> SessionRecord:
        """The session with its model's context_length and size (from /api/show) recorded."""
        facts = await self.backend.facts(session.model)
        if (facts.context_length and facts.context_length != session.context_length) or \
                facts.parameter_size != session.parameter_size:
            def record(r: SessionRecord) -> None:
                r.context_length = facts.context_length or r.context_length
                r.parameter_size = facts.parameter_size
            session = self.store.update_session(session.id, record)
        return session

    def _complete(self, job: Job, session: SessionRecord, user: MessageRecord,
                  messages: list[Message], estimate: int, answer: str, thinking: str,
                  final) -> None:
        token_count = int(final.prompt_eval_count or 0)
        eval_count = int(final.eval_count or 0)
        session, (assistant,) = self.store.append(
            session.id,
            [NewMessage(role="assistant", content=answer, thinking=thinking,
                        model=session.model, eval_count=eval_count)],
            activate_seqs=[user.seq], activate=[0], token_count=token_count)
        job.ended = True
        self.estimator.observe(session.model, [(prompt_features(messages), token_count),
                                               (text_features(answer), eval_count)])
        window = session.window
        # Ollama cut the prompt anyway (an old server ignoring `truncate`): it reports at
        # most the window, or far fewer tokens than the calibrated estimate.
        truncated = token_count >= window or (
            self.estimator.calibrated(session.model) and token_count < 0.7 * estimate)
        if truncated:
            log.warning("session=%s prompt_eval_count %d (estimated %d, window %d): "
                        "Ollama may have cut the prompt", session.id, token_count, estimate, window)
        self.bus.publish(ResponseGeneration(
            generation_id=job.id, message=assistant.info(), token_count=token_count,
            eval_count=eval_count, window=window, truncated=truncated, prompt_estimate=estimate,
            total_duration=int(final.total_duration or 0),
            load_duration=int(final.load_duration or 0),
            prompt_eval_duration=int(final.prompt_eval_duration or 0),
            eval_duration=int(final.eval_duration or 0)), session.id)
        goals = goal_markers.apply_markers(self.store.context(session.id).goals, answer)
        if goals is not None:
            def record_goals(context, _record) -> None:
                context.goals = goals
            session, _, _ = self.store.update_context(session.id, record_goals)
            self.bus.publish(GoalUpdated(goals=goals), session.id)
        context = self.store.context(session.id)
        self.bus.publish(SessionUpdated(session=session.info(busy=True)), session.id)
        self.bus.publish(ContextUsage(usage=usage_of(
            session, context, self.store.messages(session.id, context.seqs), self.estimator,
            self.config)), session.id)
        log.info("session=%s generation=%s done: %d prompt tokens (estimated %d), %d answer tokens",
                 session.id, job.id, token_count, estimate, eval_count)

    def _fail(self, job: Job, code: ErrorCode, message: str, answer: list[str],
              thinking: list[str], *batchers: TextBatcher) -> None:
        for batcher in batchers:
            batcher.flush()
        job.ended = True
        partial = "".join(answer)
        stored_seq = -1
        try:
            _, (record,) = self.store.append(job.session_id, [NewMessage(
                role="assistant", content=partial, thinking="".join(thinking),
                status="interrupted", error=code.value)])
            stored_seq = record.seq
        except StoreError as exc:
            log.error("session=%s could not keep the interrupted answer: %s", job.session_id, exc)
        self._publish_error(job, code, message, partial, stored_seq)

    def _publish_error(self, job: Job, code: ErrorCode, message: str, partial: str,
                       stored_seq: int) -> None:
        log.log(logging.INFO if code == ErrorCode.CANCELLED else logging.WARNING,
                "session=%s generation=%s %s: %s", job.session_id, job.id, code.value, message)
        self.bus.publish(GenerationError(generation_id=job.id, code=code.value, message=message,
                                         partial=partial, stored_seq=stored_seq), job.session_id)
