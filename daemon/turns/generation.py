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

A turn reads top to bottom in `_execute`: prepare (prepare.py), stream (here),
complete (complete.py); how it ends otherwise is endings.py's.
"""

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from ctxkeep.daemon.backends.protocol import ChatChunk, ChatExtras, ModelCallError
from ctxkeep.daemon.compaction.automatic import AutoCompactor
from ctxkeep.daemon.compaction.passes import Pass
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.served import Served
from ctxkeep.daemon.jobs.deferred import Deferred
from ctxkeep.daemon.jobs.giving_way import GivingWay
from ctxkeep.daemon.jobs.queue import Job, SessionJobs
from ctxkeep.daemon.store.errors import StoreError
from ctxkeep.daemon.store.records import MessageRecord, NewMessage, SessionRecord, View
from ctxkeep.daemon.store.shown import message_info
from ctxkeep.daemon.turns import waiting
from ctxkeep.daemon.turns.complete import Completer
from ctxkeep.daemon.turns.endings import Endings
from ctxkeep.daemon.turns.image_bytes import images_in
from ctxkeep.daemon.turns.output import Output
from ctxkeep.daemon.turns.prepare import Preparer, Turn
from ctxkeep.daemon.turns.question import Question, Reopened, Withdrawn
from ctxkeep.daemon.turns.repetition import REPEATING, RepetitionWatch
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationError, QueryReceived

log = logging.getLogger(__name__)
#: How often a streaming answer is saved as a draft (seconds).
DRAFT_EVERY_S = 1.0


class Drafts:
    """What an answer has streamed, saved about once a second (in the writer thread, in order
    with the answer's own commit, which removes it): a crash keeps it as the answer."""

    def __init__(self, store: Any, session_id: str, seq: int) -> None:
        self.store, self.session_id, self.seq = store, session_id, seq
        self.saved_at = time.monotonic()
        self.saved = 0

    def update(self, output: Output) -> None:
        size = len(output.answer) + len(output.thinking)
        if size == self.saved or time.monotonic() - self.saved_at < DRAFT_EVERY_S:
            return
        self.saved_at, self.saved = time.monotonic(), size
        history, text, thought = self.store.history, output.text, output.thought
        saved = self.store.env.writer.submit(
            lambda txn: history.draft_in(txn, self.session_id, self.seq, text, thought))
        saved.add_done_callback(lambda f: f.cancelled() or f.exception())  # a lost draft is no failure


async def _chain(first: Any, rest: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """The stream whose first chunk was already read."""
    yield first
    async for chunk in rest:
        yield chunk


@dataclass
class Generations:
    """Accepts user turns and runs them through the session job queue."""

    parts: Parts
    jobs: SessionJobs
    auto: AutoCompactor
    preparer: Preparer
    completer: Completer
    endings: Endings
    #: Turns starting now, for background work to give way to (jobs/giving_way.py).
    giving_way: GivingWay = field(default_factory=GivingWay)

    async def accept(self, session: SessionRecord, new: NewMessage,
                     extras: ChatExtras) -> tuple[Job, int, MessageRecord]:
        """Store the question (committed and synced: `accepted` means stored) and queue its
        turn. A turn that can start at once builds its prompt and sends its model request
        first, then has the question committed (in the writer thread, while the model
        works); a queued one's question is committed at once. Nothing of the turn is
        published before the commit returns. If the commit fails, the turn is withdrawn
        (no event: no client was told of it) and the error raised. Returns the job, how
        many jobs are ahead of it, and the stored question."""
        history = self.parts.store.history
        commit = Deferred(lambda: history.append_async(session.id, [new], pending=True))
        job = Job(session_id=session.id, kind="generation", body=lambda j: self._execute(
                      j, Question(commit, new.record(-1, 0.0), self._announcer(j, session)), extras),
                  fail=lambda j, code, message: self.endings.before_start(j, commit.start(), code, message))
        ahead = self.jobs.submit(job, announce=False)  # busy once accepted: below
        stored = commit.start() if ahead else commit.future
        try:
            _, (user,) = await asyncio.shield(stored)
        except asyncio.CancelledError:  # the caller went away: a question that gets stored is
            def kept(f: "asyncio.Future") -> None:  # answered (or interrupted), never left pending
                if f.cancelled() or f.exception() is not None:
                    self.jobs.withdraw(job)
                elif ahead == 0:
                    self.jobs.announce_busy(session.id)
            stored.add_done_callback(kept)
            raise
        except BaseException:
            self.jobs.withdraw(job)
            raise
        if ahead == 0:  # after the model request went out (published events wake threads)
            self.jobs.announce_busy(session.id)
        return job, ahead, user

    def regenerate(self, session: SessionRecord, reopened: Reopened, extras: ChatExtras,
                   edited: NewMessage | None = None, prefill: str = "") -> Job:
        """Queue a new answer to the last question (or to `edited`, asked in its place). Its
        turn first takes the question and its answer out of the active context (one synced
        commit, so the prompt is built without them: `store.context.reopen`), then runs as
        the question's turn did; if it fails, even while that commit is on its way, the two
        go back."""
        store = self.parts.store
        commit = Deferred(lambda: store.off_loop(store.context.reopen, session.id, reopened.question,
                                                 reopened.back, edited))

        async def body(job: Job) -> None:
            try:
                _, (user,) = await asyncio.shield(commit.start())
            except StoreError as exc:  # the exchange changed meanwhile: nothing was done
                job.end(GenerationError(generation_id=job.id, code=exc.code.value, message=str(exc)))
                return
            question = Question(commit, user, self._announcer(job, session), reopened=reopened)
            await self._execute(job, question, extras, prefill)

        def failed(job: Job, code: ErrorCode, message: str) -> GenerationError:
            if not commit.started:
                return GenerationError(generation_id=job.id, code=code.value, message=message)
            return self.endings.before_start(job, commit.future, code, message, reopened)
        job = Job(session_id=session.id, kind="generation", body=body, fail=failed)
        self.jobs.submit(job)
        return job

    def _announcer(self, job: Job, session: SessionRecord) -> Callable[[MessageRecord], object]:
        """What says a turn's question is stored (`query.received`)."""
        return lambda user: self.parts.bus.publish(QueryReceived(
            generation_id=job.id, message=message_info(user), model=session.model), session.id)

    async def _execute(self, job: Job, question: Question, extras: ChatExtras, prefill: str = "") -> None:
        """The turn, top to bottom. Its question is committed once the model request is
        out, or before anything that waits (a call to /api/show, a compaction, a failure).
        With `prefill`, the answer goes on from it (a continue) and is stored whole."""
        sid = job.session_id
        view = self.parts.store.history.view(sid)  # read once; each step passes it on
        if self.parts.backend.known_facts(view.session.model) is None:
            question.start()  # /api/show is asked first: `accepted` does not wait for it
        output = Output(self.parts.bus, sid, job.id, self.parts.config.token_batch_ms / 1000.0)
        compacted = Pass("the next prompt would not fit")  # taken back if the turn fails
        started = self.giving_way.starting()  # background embedding waits for its first token
        try:
            turn = await self.preparer.prepare(job.id, view, question, compacted, extras.tools, prefill)
            output.prefill = prefill
            await self._stream(job, turn, question, output, extras, started)
            done = await self.completer.complete(job, turn, await question.settled(), output,
                                                 question.reopened, extras.format)
        except Withdrawn:
            return  # the question could not be stored: no client was told of this turn
        except BaseException as exc:  # every ending ends the turn once
            started()
            await self._end(job, question, compacted, output, exc)
            if not isinstance(exc, (Exception, asyncio.CancelledError)):
                raise
            return
        finally:
            started()
        if done is not None:
            self._served(turn, output, extras, done)
            await self._after(done)

    def _served(self, turn: Turn, output: Output, extras: ChatExtras, done: View) -> None:
        """What the model's server now holds, for a summary to go on from: the turn's prompt
        and its answer, where they are sent again as they were read (not with tools or images,
        or an answer that thought or called tools: those are sent again otherwise)."""
        session = turn.view.session
        plain = not (extras.tools or output.thought or output.calls) and not any("images" in m for m in turn.messages)
        if plain:
            counted = done.session.count.tokens if done.session.count.exact else 0
            self.parts.served.turn(session.model, Served(
                session.id, [*(turn.messages[:-1] if output.prefill else turn.messages),
                             {"role": "assistant", "content": output.text}], turn.view,
                counted, turn.estimate.tokens))

    async def _stream(self, job: Job, turn: Turn, question: Question, output: Output,
                      extras: ChatExtras, started: Callable[[], None]) -> None:
        """Send the request and read the answer into `output`. The request goes out from
        this task; the question's commit starts the moment it is out (the backend calls
        back), or soon at the latest (waiting.first_chunk). `started` is called once the
        first chunk is in."""
        session = turn.view.session
        backend = self.parts.backend
        self.parts.served.other(session.model)  # whatever it held, it reads this turn now
        messages = await images_in(self.parts.store, turn.messages)
        stream = backend.stream_chat(session.model, messages, turn.options, extras,
                                     on_sent=question.start)
        speeds, prompt = self.parts.speeds, turn.estimate.tokens
        try:
            first = await waiting.first_chunk(stream, question, lambda: waiting.patience(
                backend, session.model, job.id,
                speeds.patience(session.model, prompt, self.parts.config.first_token_timeout),
                lambda event: self.parts.bus.publish(event, session.id), speeds.said(session.model, prompt)))
            user = await question.settled()
        except BaseException:
            await stream.aclose()  # ended already, unless the question could not be stored
            raise
        output.add(first)  # the first token goes out now, before the rest of the reading is set up
        started()
        drafts = Drafts(self.parts.store, session.id, user.seq)
        watch = RepetitionWatch(self.parts.config.repetition_stop)
        async with aclosing(_chain(first, stream)) as chunks:
            async for chunk in chunks:
                if chunk is not first:
                    output.add(chunk)
                drafts.update(output)
                if watch.add(chunk.content):  # a loop: stopped here, kept, and said so
                    log.info("session=%s generation=%s stopped: the answer repeats itself", session.id, job.id)
                    output.final = ChatChunk(done=True, done_reason=REPEATING, host=chunk.host)
                    break
        await stream.aclose()  # the server stops writing once its connection is closed
        output.flush()
        assert output.final is not None  # stream_chat raises when the final chunk is missing
        if not (output.streamed.strip() or output.thought.strip() or output.calls):
            raise ModelCallError(ErrorCode.OLLAMA_ERROR, f"{session.model} answered nothing (an empty answer; "
                                 f"it ended with {output.final.done_reason or 'no reason given'!r}): send "
                                 "again, or regenerate; if it keeps happening, the model server's chat "
                                 "template or model is at fault (its log says more)")

    async def _end(self, job: Job, question: Question, compacted: Pass, output: Output,
                   exc: BaseException) -> None:
        """A turn that did not complete: the pass made for it taken back, one error event."""
        try:
            user = await question.settled()  # stopped beside the question's commit: wait for it
        except Withdrawn:
            return
        if not job.ended:
            try:  # a turn that fails changes nothing
                await asyncio.shield(self.auto.roll_back(job.session_id, compacted))
            except Exception:  # the turn's own failure is what it reports
                log.exception("session=%s could not take back the compaction made for a failed "
                              "turn (`ctxkeep undo` does it)", job.session_id)
        self.endings.fail(job, user, exc, output, question.reopened)

    async def _after(self, view: View) -> None:
        """The answer is stored and announced; now keep the context within its budget."""
        try:
            await self.auto.after_turn(view)
        except asyncio.CancelledError:
            pass
        except Exception:  # each level already published its own result
            log.exception("session=%s automatic compaction after the turn failed", view.session.id)
