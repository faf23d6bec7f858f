"""How a turn ends when it does not complete: one `generation.error`, the partial answer
kept in history marked `interrupted`; a turn whose question was never stored is
withdrawn with no event (question.py)."""

import asyncio
import logging
from dataclasses import dataclass

from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.jobs.queue import Job
from ctxkeep.daemon.store.records import MessageRecord, NewMessage
from ctxkeep.daemon.store.store import Store, StoreError
from ctxkeep.daemon.turns.output import Output
from ctxkeep.daemon.turns.question import Reopened, stored_question
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationError

log = logging.getLogger("ctxkeep.daemon.turns.generation")


@dataclass
class Endings:
    """The failure paths of a turn."""

    store: Store

    def before_start(self, job: Job, commit: "asyncio.Future", code: ErrorCode,
                     message: str, reopened: Reopened | None = None) -> GenerationError:
        """The terminal event of a turn that ended before its body could end it."""
        user = stored_question(commit)
        if user is None:  # still being stored: its interrupted answer follows it
            def later(f: "asyncio.Future") -> None:
                question = stored_question(f)
                if question is not None:
                    self.interrupted(job, question, code, message, "", "", reopened)
            commit.add_done_callback(later)
            return GenerationError(generation_id=job.id, code=code.value, message=message)
        return self.interrupted(job, user, code, message, "", "", reopened)

    def fail(self, job: Job, user: MessageRecord, exc: BaseException, output: Output,
             reopened: Reopened | None = None) -> None:
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
        output.flush()
        if job.ended:  # the answer was stored and announced; what failed came after it
            log.error("session=%s generation=%s failed after its answer: %s", job.session_id,
                      job.id, message)
            return
        job.end(self.interrupted(job, user, code, message, output.text, output.thought, reopened))

    def interrupted(self, job: Job, user: MessageRecord, code: ErrorCode, message: str,
                    partial: str, thinking: str, reopened: Reopened | None = None) -> GenerationError:
        """Keep what there is of the answer, marked interrupted; the terminal error event.
        A regenerated turn's exchange goes back into the active context as it was."""
        stored_seq = -1
        try:
            _, (record,) = self.store.history.append(job.session_id, [NewMessage(
                role="assistant", content=partial, thinking=thinking, status="interrupted",
                error=code.value, reply_to=user.seq,
                alternative_of=reopened.answer if reopened else -1)], answered=[user.seq],
                activate_seqs=reopened.back if reopened else ())
            stored_seq = record.seq
        except StoreError as exc:
            log.error("session=%s could not keep the interrupted answer: %s", job.session_id, exc)
        log.log(logging.INFO if code == ErrorCode.CANCELLED else logging.WARNING,
                "session=%s generation=%s %s: %s", job.session_id, job.id, code.value, message)
        return GenerationError(generation_id=job.id, code=code.value, message=message,
                               partial=partial, stored_seq=stored_seq)
