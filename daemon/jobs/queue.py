"""Per-session work queue: the one owner of every job's life.

Work for one session (generations, manual compactions) runs in the order it
was accepted and never interleaves; different sessions run at once. The
queue guarantees that every accepted job ends with exactly one terminal
event, however it ends:

- its body publishes it (`job.end(event)`), or
- it is cancelled while queued: the queue removes it and publishes its
  failure event at once (its body never runs);
- it is cancelled while running, raises, or returns without ending: the
  queue publishes its failure event;
- the daemon shuts down: running jobs get `drain`'s grace period, then are
  cancelled; queued ones end as `shutting_down`.

A job that was never accepted (its question could not be stored) is withdrawn:
it ends with no event, as no client was told of it.

A session is busy while its queue holds a job; the callback given to
`watch_busy` is called with its id whenever that changes: when its first job is accepted (at `submit`, or
for a job accepted later — a turn, once its question is stored — when its
submitter calls `announce_busy`), and after the terminal event of the last job.
"""

import asyncio
import logging
import secrets
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import CompactionResult, Event, GenerationError

log = logging.getLogger(__name__)

Kind = Literal["generation", "compaction"]
State = Literal["queued", "running", "ended"]


@dataclass(eq=False)
class Job:
    """One accepted piece of session work.

    `body` does the work and ends the job with `end(event)`; `fail(job, code,
    message)` returns the terminal event for a job that ended any other way
    (it may first record the failure, e.g. mark an answer interrupted).
    """

    session_id: str
    kind: Kind
    body: Callable[["Job"], Coroutine[Any, Any, None]]
    fail: Callable[["Job", ErrorCode, str], Event]
    id: str = field(default_factory=lambda: secrets.token_hex(6))
    state: State = "queued"
    task: "asyncio.Task[None] | None" = None
    #: Why the running task was cancelled: read by bodies that record their own failure.
    cancel_reason: tuple[ErrorCode, str] = (ErrorCode.CANCELLED, "cancelled by a client")
    terminal: Event | None = None
    #: Withdrawn before it was accepted (see `SessionJobs.withdraw`): it ends with no event.
    withdrawn: bool = False
    _publish: Callable[[Event, str], object] | None = None

    @property
    def ended(self) -> bool:
        return self.terminal is not None or self.withdrawn

    def end(self, event: Event) -> bool:
        """Publish the job's terminal event. Only the first call publishes; a second
        is a bug, logged and ignored, so no client ever sees two endings."""
        if self.withdrawn:
            return False
        if self.terminal is not None:
            log.error("%s %s: a second terminal event (%s) was not published",
                      self.kind, self.id, type(event).__name__)
            return False
        self.terminal = event
        if self._publish is not None:
            self._publish(event, self.session_id)
        return True


class SessionJobs:
    """The queues of all sessions."""

    def __init__(self, publish: Callable[[Event, str], object]) -> None:
        self._publish = publish
        self._on_busy: Callable[[str], None] = lambda _sid: None
        self._queues: dict[str, deque[Job]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self.closing = False

    def watch_busy(self, on_busy: Callable[[str], None]) -> None:
        """Call `on_busy(session_id)` whenever a session becomes busy or idle."""
        self._on_busy = on_busy

    def busy(self, session_id: str) -> bool:
        return session_id in self._queues

    async def idle(self, session_id: str, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the session's work to end; whether it did."""
        worker = self._workers.get(session_id)
        if worker is not None:
            await asyncio.wait([worker], timeout=timeout)
        return not self.busy(session_id)

    def busy_sessions(self) -> frozenset[str]:
        """The sessions with a job queued or running."""
        return frozenset(self._queues)

    def has(self, session_id: str, kind: Kind) -> bool:
        return any(j.kind == kind for j in self._queues.get(session_id, ()))

    def running(self, kind: Kind | None = None) -> int:
        return sum(1 for queue in self._queues.values() for j in queue
                   if j.state == "running" and (kind is None or j.kind == kind))

    def jobs(self, session_id: str) -> list[Job]:
        """The session's jobs, the running one first."""
        return list(self._queues.get(session_id, ()))

    def submit(self, job: Job, announce: bool = True) -> int:
        """Queue a job; returns how many jobs of its session are ahead of it. A job that
        finds its session idle has the session's busy state announced now (with
        `announce=False`, when its submitter calls `announce_busy`)."""
        job._publish = self._publish
        queue = self._queues.get(job.session_id)
        became_busy = queue is None
        if queue is None:
            queue = self._queues[job.session_id] = deque()
        ahead = len(queue)
        queue.append(job)
        if became_busy:  # its body starts on the loop's next turn, not after the worker's first
            self._start(job)
            self._workers[job.session_id] = asyncio.create_task(
                self._work(job.session_id, queue), name=f"jobs-{job.session_id}")
            if announce:
                self._on_busy(job.session_id)
        return ahead

    def announce_busy(self, session_id: str) -> None:
        """Announce that the session is busy (for a job submitted with `announce=False`,
        once it is accepted); nothing when its work has ended meanwhile."""
        if self.busy(session_id):
            self._on_busy(session_id)

    def cancel(self, session_id: str, job_id: str = "",
               reason: tuple[ErrorCode, str] = (ErrorCode.CANCELLED, "cancelled by a client")) -> Job | None:
        """Cancel the job with that id, or without an id the session's first job
        (running or about to run). Returns the job when a terminal event will follow
        (a queued job's is already published; for the compaction after an answer, its
        compaction.result), None when there was nothing to cancel. A job that has ended but
        still works (the compaction after an answer) is stopped too: it puts the context
        back as it was before it."""
        for job in self._queues.get(session_id, ()):
            if job_id and job.id != job_id:
                continue
            if job.state == "queued":
                self._queues[session_id].remove(job)
                if job.task is not None:  # started, but its body has not run yet
                    job.task.cancel()
                self._end(job, *reason)
                return job
            if job.state == "running" and job.task is not None and not job.task.done():
                job.cancel_reason = reason
                job.task.cancel()
                return job
            return None
        return None

    def withdraw(self, job: Job) -> None:
        """Take back a job whose acceptance failed (its `send` answered an error): it
        leaves its queue, or its task is stopped, and no event of it is published."""
        job.withdrawn = True
        queue = self._queues.get(job.session_id)
        if job.state == "queued" and queue is not None and job in queue:
            queue.remove(job)
        if job.task is not None and not job.task.done():
            job.task.cancel()

    async def drain(self, timeout: float) -> None:
        """Shutdown: let running jobs finish for up to `timeout` seconds; queued jobs
        that have not started by then end as `shutting_down`, running ones are cancelled."""
        self.closing = True
        workers = list(self._workers.values())
        if not workers:
            return
        log.info("waiting up to %.0f s for %d session(s) to finish their work", timeout, len(workers))
        _, pending = await asyncio.wait(workers, timeout=timeout)
        reason = (ErrorCode.SHUTTING_DOWN, "ctxkeepd stopped before this finished: send it again "
                                           "once the daemon is back")
        for session_id in list(self._queues):
            for job in self.jobs(session_id):
                self.cancel(session_id, job.id, reason)
        if pending:
            await asyncio.wait(pending)

    def _end(self, job: Job, code: ErrorCode, message: str) -> None:
        """End a job that did not end itself, with its failure event."""
        if job.ended:
            return
        try:
            event = job.fail(job, code, message)
        except Exception:  # the terminal event must still go out
            log.exception("%s %s: recording its failure failed", job.kind, job.id)
            event = _fallback_failure(job, code, message)
        job.end(event)
        job.state = "ended"

    async def _work(self, session_id: str, queue: deque[Job]) -> None:
        """Run the session's jobs one after the other until its queue is empty."""
        try:
            while queue:
                job = queue[0]
                task = job.task or self._start(job)
                try:
                    await asyncio.wait([task])
                except asyncio.CancelledError:  # the worker itself: stop the job, then go
                    task.cancel()
                    await asyncio.wait([task])
                    raise
                finally:
                    self._settle(job)
                    if queue and queue[0] is job:
                        queue.popleft()
        finally:
            for job in list(queue):
                self._end(job, ErrorCode.SHUTTING_DOWN, "ctxkeepd stopped before this started")
            queue.clear()
            self._queues.pop(session_id, None)
            self._workers.pop(session_id, None)
            try:
                self._on_busy(session_id)
            except Exception:
                log.exception("session=%s announcing the end of its work failed", session_id)

    @staticmethod
    def _start(job: Job) -> "asyncio.Task[None]":
        """The job's task: its body, which runs from the loop's next turn on (`running`
        from then)."""
        async def run() -> None:
            job.state = "running"
            await job.body(job)
        job.task = asyncio.create_task(run(), name=f"{job.kind}-{job.id}")
        return job.task

    def _settle(self, job: Job) -> None:
        """After a job's task is done: make sure it ended, exactly once."""
        task = job.task
        assert task is not None
        if task.done() and not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("%s %s failed", job.kind, job.id, exc_info=exc)
            self._end(job, ErrorCode.INTERNAL,
                      f"internal error ({exc!r}): see the daemon's log, and report it")
        elif task.cancelled() or not task.done():
            self._end(job, *job.cancel_reason)
        elif not job.ended:
            log.error("%s %s returned without a terminal event", job.kind, job.id)
            self._end(job, ErrorCode.INTERNAL, "the job ended without a result: see the daemon's log")
        job.state = "ended"


def _fallback_failure(job: Job, code: ErrorCode, message: str) -> Event:
    """The terminal event of a job whose own failure handler raised."""
    if job.kind == "generation":
        return GenerationError(generation_id=job.id, code=code.value, message=message)
    return CompactionResult(compaction_id=job.id, status="failed", reason=f"{code.value}: {message}")
