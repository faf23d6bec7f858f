"""The session job queue in-process: every accepted job ends exactly once, however it ends,
and the session's busy state follows the queue."""

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.jobs.queue import Job, SessionJobs
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import CompactionResult, Event, GenerationError


class Recorder:
    """The queue's publish and on_busy, recorded."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Event]] = []
        self.busy_changes: list[tuple[str, bool]] = []
        self.jobs: SessionJobs | None = None

    def publish(self, event: Event, session_id: str) -> None:
        self.events.append((session_id, event))

    def on_busy(self, session_id: str) -> None:
        assert self.jobs is not None
        self.busy_changes.append((session_id, self.jobs.busy(session_id)))

    def terminals(self, job: Job) -> list[Event]:
        return [e for _, e in self.events if getattr(e, "generation_id", None) == job.id]


def make(recorder: Recorder) -> SessionJobs:
    jobs = SessionJobs(recorder.publish)
    jobs.watch_busy(recorder.on_busy)
    recorder.jobs = jobs
    return jobs


def job(session: str, body, kind="generation") -> Job:
    return Job(session_id=session, kind=kind, body=body,
               fail=lambda j, code, message: GenerationError(generation_id=j.id, code=code.value,
                                                             message=message))


async def ends_itself(j: Job) -> None:
    await asyncio.sleep(0)
    j.end(GenerationError(generation_id=j.id, code="done", message="ok"))


def run(coro):
    return asyncio.run(coro)


async def idle(jobs: SessionJobs, *sessions: str, timeout: float = 5.0) -> None:
    """Wait (with a deadline) until the sessions' queues are empty."""
    deadline = asyncio.get_running_loop().time() + timeout
    while any(jobs.busy(s) for s in sessions or ("s",)):
        assert asyncio.get_running_loop().time() < deadline, "the queue did not empty"
        await asyncio.sleep(0.001)


def test_a_job_cancelled_before_it_started_ends_at_once_and_the_session_is_idle():
    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        first = job("s", ends_itself)
        jobs.submit(first)
        assert jobs.cancel("s") is first  # cancelled before its body ever ran
        assert [e.code for e in rec.terminals(first)] == [ErrorCode.CANCELLED.value]
        await asyncio.sleep(0.01)
        assert not jobs.busy("s")
        assert rec.busy_changes == [("s", True), ("s", False)]
        assert jobs.cancel("s") is None
    run(scenario())


def test_a_job_on_an_idle_session_starts_on_the_loops_next_turn():
    """A turn's first token waits for its body to start: one loop turn after `submit`, not
    two (the worker's first step, then the body's)."""
    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        started: list[str] = []

        async def body(j: Job) -> None:
            started.append(j.state)
            await ends_itself(j)
        first, second = job("s", body), job("s", body)
        jobs.submit(first)
        jobs.submit(second)
        assert first.state == second.state == "queued"
        await asyncio.sleep(0)
        assert started == ["running"]
        await idle(jobs)
        assert started == ["running", "running"]
        assert [len(rec.terminals(j)) for j in (first, second)] == [1, 1]
    run(scenario())


def test_a_job_withdrawn_before_its_body_ran_never_runs_and_ends_with_no_event():
    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        ran: list[Job] = []

        async def body(j: Job) -> None:
            ran.append(j)
            await ends_itself(j)
        first = job("s", body)
        jobs.submit(first, announce=False)
        jobs.withdraw(first)  # its question could not be stored
        await idle(jobs)
        assert ran == [] and rec.events == []
    run(scenario())


def test_cancelling_the_third_of_three_queued_jobs():
    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        three = [job("s", ends_itself) for _ in range(3)]
        assert [jobs.submit(j) for j in three] == [0, 1, 2]
        assert jobs.cancel("s", three[2].id) is three[2]
        await idle(jobs)
        assert [len(rec.terminals(j)) for j in three] == [1, 1, 1]
        assert rec.terminals(three[2])[0].code == "cancelled"
        assert [rec.terminals(j)[0].code for j in three[:2]] == ["done", "done"]
    run(scenario())


def test_an_exception_in_a_body_ends_the_job_with_internal():
    async def boom(j: Job) -> None:
        raise ZeroDivisionError("division by zero")

    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        bad = job("s", boom)
        jobs.submit(bad)
        await idle(jobs)
        (end,) = rec.terminals(bad)
        assert end.code == "internal" and "ZeroDivisionError" in end.message
        assert rec.busy_changes[-1] == ("s", False)
    run(scenario())


def test_a_body_that_returns_without_ending_still_ends_once():
    async def forgets(j: Job) -> None:
        return None

    async def twice(j: Job) -> None:
        j.end(GenerationError(generation_id=j.id, code="a", message=""))
        j.end(GenerationError(generation_id=j.id, code="b", message=""))

    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        a, b = job("s", forgets), job("s", twice)
        jobs.submit(a)
        jobs.submit(b)
        await idle(jobs)
        assert [e.code for e in rec.terminals(a)] == ["internal"]
        assert [e.code for e in rec.terminals(b)] == ["a"]
    run(scenario())


def test_a_failing_failure_handler_still_publishes_a_terminal_event():
    async def scenario():
        rec = Recorder()
        jobs = make(rec)

        def broken(j, code, message):
            raise OSError("disk gone")
        j = Job(session_id="s", kind="compaction", body=ends_itself, fail=broken)
        jobs.submit(j)
        jobs.cancel("s", j.id)
        (end,) = [e for _, e in rec.events if isinstance(e, CompactionResult)]
        assert end.status == "failed" and "cancelled" in end.reason
    run(scenario())


def test_drain_ends_queued_jobs_and_cancels_running_ones():
    async def slow(j: Job) -> None:
        await asyncio.sleep(30)
        j.end(GenerationError(generation_id=j.id, code="done", message=""))

    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        running, queued = job("s", slow), job("s", slow)
        jobs.submit(running)
        jobs.submit(queued)
        await asyncio.sleep(0.01)
        await asyncio.wait_for(jobs.drain(0.05), 5)
        assert [e.code for e in rec.terminals(running)] == ["shutting_down"]
        assert [e.code for e in rec.terminals(queued)] == ["shutting_down"]
        assert not jobs.busy("s")
    run(scenario())


def test_drain_stops_work_that_goes_on_after_the_terminal_event():
    async def ends_then_works(j: Job) -> None:
        j.end(GenerationError(generation_id=j.id, code="done", message=""))
        await asyncio.sleep(30)  # e.g. the compaction pass after an answer

    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        j = job("s", ends_then_works)
        jobs.submit(j)
        await asyncio.sleep(0.01)
        await asyncio.wait_for(jobs.drain(0.05), 5)
        assert [e.code for e in rec.terminals(j)] == ["done"] and not jobs.busy("s")
    run(scenario())


def test_a_client_stops_work_that_goes_on_after_the_terminal_event():
    """The compaction after an answer is cancelled like any job (issue 59): the job is
    returned (the work stops), and no second terminal event is published."""
    async def ends_then_works(j: Job) -> None:
        j.end(GenerationError(generation_id=j.id, code="done", message=""))
        await asyncio.sleep(30)  # e.g. the compaction pass after an answer

    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        j = job("s", ends_then_works)
        jobs.submit(j)
        await asyncio.sleep(0.01)
        assert jobs.cancel("s", j.id) is j and j.ended
        assert await jobs.idle("s", 5)
        assert [e.code for e in rec.terminals(j)] == ["done"]
    run(scenario())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["submit", "cancel_first", "cancel_last", "tick",
                                           "cancel_id"]),
                          st.sampled_from(["a", "b"]),
                          st.sampled_from(["ok", "boom", "slow", "forget"])), max_size=25))
def test_every_accepted_job_ends_exactly_once(steps):
    """Random interleavings of submits, cancels and scheduling on two sessions."""
    async def body_of(kind):
        async def body(j: Job) -> None:
            if kind == "slow":
                await asyncio.sleep(0.002)
            await asyncio.sleep(0)
            if kind == "boom":
                raise RuntimeError("boom")
            if kind != "forget":
                j.end(GenerationError(generation_id=j.id, code="done", message=""))
        return body

    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        accepted: list[Job] = []
        for action, session, kind in steps:
            if action == "submit":
                j = job(session, await body_of(kind))
                jobs.submit(j)
                accepted.append(j)
            elif action == "cancel_first":
                jobs.cancel(session)
            elif action == "cancel_last":
                mine = [j for j in accepted if j.session_id == session]
                if mine:
                    jobs.cancel(session, mine[-1].id)
            elif action == "cancel_id":
                jobs.cancel(session, "no-such-id")
            else:
                await asyncio.sleep(0.001)
        await idle(jobs, "a", "b")
        for j in accepted:
            assert len(rec.terminals(j)) == 1, (j, rec.terminals(j))
        for session in ("a", "b"):  # busy changes alternate, ending idle
            changes = [busy for s, busy in rec.busy_changes if s == session]
            assert changes == [True, False] * (len(changes) // 2)
    run(scenario())


@pytest.mark.parametrize("state", ["queued", "running"])
def test_cancel_reports_whether_a_terminal_event_follows(state):
    async def scenario():
        rec = Recorder()
        jobs = make(rec)
        started = asyncio.Event()

        async def waits(j: Job) -> None:
            started.set()
            await asyncio.sleep(30)
        first = job("s", waits)
        jobs.submit(first)
        target = first
        if state == "queued":
            target = job("s", waits)
            jobs.submit(target)
        await started.wait()
        assert jobs.cancel("s", target.id) is target
        if state == "queued":
            jobs.cancel("s", first.id)
        await idle(jobs)
        assert [e.code for e in rec.terminals(target)] == ["cancelled"]
    run(scenario())
