"""Per-session work queue: generations and compactions, one at a time per session.

Work for one session runs in the order it was submitted and never
interleaves; different sessions run at once. Any job can be cancelled,
running or still queued; drain() lets running jobs finish at shutdown.
"""

import asyncio
import logging
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

log = logging.getLogger(__name__)

Kind = Literal["generation", "compaction"]


@dataclass
class Job:
    """One queued or running piece of session work."""

    session_id: str
    kind: Kind
    id: str = field(default_factory=lambda: secrets.token_hex(6))
    task: asyncio.Task | None = None
    started: bool = False
    #: Set by the job once it has published its terminal event.
    ended: bool = False


@dataclass
class SessionJobs:
    """Runs jobs; `run(job)` does the work, `cancelled_early(job)` reports a job
    cancelled before it started."""

    _locks: dict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))
    _queues: dict[str, list[Job]] = field(default_factory=dict)

    def busy(self, session_id: str) -> bool:
        return bool(self._queues.get(session_id))

    def has(self, session_id: str, kind: Kind) -> bool:
        return any(j.kind == kind for j in self._queues.get(session_id, []))

    def running(self, kind: Kind | None = None) -> int:
        return sum(1 for queue in self._queues.values() for j in queue
                   if j.started and (kind is None or j.kind == kind))

    def submit(self, job: Job, run: Callable[[Job], Awaitable[None]],
               cancelled_early: Callable[[Job], None]) -> int:
        """Queue a job; returns how many jobs of its session are ahead of it."""
        queue = self._queues.setdefault(job.session_id, [])
        ahead = len(queue)
        queue.append(job)
        job.task = asyncio.create_task(self._run(job, run, cancelled_early),
                                       name=f"{job.kind}-{job.id}")
        return ahead

    def cancel(self, session_id: str, job_id: str = "") -> Job | None:
        """Cancel the session's running job, or the job with that id (running or queued)."""
        for job in self._queues.get(session_id, []):
            if (job.id == job_id) if job_id else job.started:
                if job.task and not job.task.done():
                    job.task.cancel()
                    return job
        return None

    async def drain(self, timeout: float) -> None:
        """Let running jobs finish for up to `timeout` seconds, then cancel the rest."""
        tasks = [j.task for queue in self._queues.values() for j in queue if j.task]
        if not tasks:
            return
        log.info("waiting up to %.0f s for %d job(s)", timeout, len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    async def _run(self, job: Job, run: Callable[[Job], Awaitable[None]],
                   cancelled_early: Callable[[Job], None]) -> None:
        try:
            async with self._locks[job.session_id]:
                job.started = True
                await run(job)
        except asyncio.CancelledError:
            if not job.ended:
                cancelled_early(job)
        except Exception:  # noqa: BLE001 - a bug in one job must not stop the daemon
            log.exception("%s %s failed", job.kind, job.id)
        finally:
            queue = self._queues.get(job.session_id, [])
            if job in queue:
                queue.remove(job)
            if not queue:
                self._queues.pop(job.session_id, None)
                self._locks.pop(job.session_id, None)
