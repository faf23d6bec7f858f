"""How a turn ends when it does not complete: one `generation.error`, the partial
answer kept in history marked `interrupted`, and a turn whose question was never stored
withdrawn with no event (the mixin `Generations` ends its turns with)."""

import asyncio
import logging

from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.jobs.queue import Job
from ctxkeep.daemon.events.batcher import TextBatcher
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.store.records import MessageRecord, NewMessage
from ctxkeep.daemon.store.store import StoreError
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationError

log = logging.getLogger("ctxkeep.daemon.jobs.generation")


class Withdrawn(Exception):
    """The question's commit failed: the turn ends without an event (its `send` got the
    error)."""


class TurnEndings:
    """The failure paths of a turn; needs `store`."""

    store: Store

    @staticmethod
    def _stored_question(stored: "asyncio.Future") -> MessageRecord | None:
        """The stored question, once its commit succeeded (else None)."""
        if not stored.done() or stored.cancelled() or stored.exception() is not None:
            return None
        return stored.result()[1][0]

    async def _settled_question(self, stored: "asyncio.Future") -> MessageRecord | None:
        """The question once its commit is done (however this task was stopped)."""
        await asyncio.wait([stored])
        return self._stored_question(stored)

    def _failed(self, job: Job, stored: "asyncio.Future", code: ErrorCode,
                message: str) -> GenerationError:
        """The terminal event of a turn that ended before its body could end it."""
        user = self._stored_question(stored)
        if user is None:  # still being stored: its interrupted answer follows it
            def later(f: "asyncio.Future") -> None:
                question = self._stored_question(f)
                if question is not None:
                    self._interrupted(job, question, code, message, "", "")
            stored.add_done_callback(later)
            return GenerationError(generation_id=job.id, code=code.value, message=message)
        return self._interrupted(job, user, code, message, "", "")

    def _fail_with(self, job: Job, user: MessageRecord, exc: BaseException, answer: list[str],
                   thinking: list[str], *batchers: TextBatcher) -> None:
        """End the turn for what stopped it: a cancel, a coded error, or a bug."""
        if isinstance(exc, RequestError):  # a ModelCallError too
            code, message = exc.code, exc.message
        elif isinstance(exc, StoreError):
            code, message = exc.code, f"could not store the answer: {exc}"
        elif isinstance(exc, Exception):  # a bug still ends the turn, with its answer marked
            log.error("session=%s generation=%s failed", job.session_id, job.id, exc_info=exc)
            code, message = ErrorCode.INTERNAL, (f"internal error ({exc!r}): see the daemon's "
                                                 "log, and report it")
        else:
            code, message = job.cancel_reason
        self._fail(job, user, code, message, answer, thinking, *batchers)

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
            _, (record,) = self.store.history.append(job.session_id, [NewMessage(
                role="assistant", content=partial, thinking=thinking, status="interrupted",
                error=code.value, reply_to=user.seq)], answered=[user.seq])
            stored_seq = record.seq
        except StoreError as exc:
            log.error("session=%s could not keep the interrupted answer: %s", job.session_id, exc)
        log.log(logging.INFO if code == ErrorCode.CANCELLED else logging.WARNING,
                "session=%s generation=%s %s: %s", job.session_id, job.id, code.value, message)
        return GenerationError(generation_id=job.id, code=code.value, message=message,
                               partial=partial, stored_seq=stored_seq)
