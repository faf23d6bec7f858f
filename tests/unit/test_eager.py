"""`eager_task`: the first step runs before it returns, as the new task, and the task then
behaves as any task does (its result, its error, a cancel at any point, its context)."""

import asyncio
import contextvars

import pytest

from ctxkeep.daemon.jobs.eager import eager_task

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="caller's")


def run(coro):
    return asyncio.run(coro)


def test_the_first_step_runs_before_it_returns_as_the_new_task():
    async def main():
        seen = []

        async def body():
            seen.append(asyncio.current_task())
            await asyncio.sleep(0)
            seen.append(asyncio.current_task())
            return 7

        outer = asyncio.current_task()
        task = eager_task(body(), name="eager")
        assert seen == [task] and asyncio.current_task() is outer
        assert await task == 7
        assert seen == [task, task]
    run(main())


def test_nested_eager_tasks_give_the_running_task_back_to_each_caller():
    async def main():
        seen = []

        async def inner():
            seen.append(("inner", asyncio.current_task().get_name()))
            await asyncio.sleep(0)

        async def outer():
            seen.append(("outer", asyncio.current_task().get_name()))
            task = eager_task(inner(), name="inner")
            seen.append(("outer again", asyncio.current_task().get_name()))
            await task

        await eager_task(outer(), name="outer")
        assert seen == [("outer", "outer"), ("inner", "inner"), ("outer again", "outer")]
    run(main())


def test_a_result_or_an_error_of_the_first_step_is_the_tasks():
    async def main():
        async def at_once():
            return "done"

        async def fails():
            raise ValueError("no")

        assert await eager_task(at_once()) == "done"
        failing = eager_task(fails())
        with pytest.raises(ValueError, match="no"):
            await failing
    run(main())


def test_a_cancel_before_the_tasks_first_turn_reaches_the_coroutine_where_it_waits():
    async def main():
        steps = []
        waited = asyncio.get_running_loop().create_future()

        async def body():
            try:
                await waited
            except asyncio.CancelledError:
                steps.append("cancelled")
                raise
            finally:
                steps.append("finally")

        task = eager_task(body())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert steps == ["cancelled", "finally"] and task.cancelled() and waited.cancelled()
    run(main())


def test_a_cancel_later_and_a_timeout_in_the_first_step_stop_this_task_only():
    async def main():
        async def sleeps():
            await asyncio.sleep(10)

        later = eager_task(sleeps())
        await asyncio.sleep(0)
        later.cancel()
        with pytest.raises(asyncio.CancelledError):
            await later

        async def times_out():
            async with asyncio.timeout(0.01):  # it names the running task: this one
                await asyncio.sleep(10)
        with pytest.raises(TimeoutError):
            await eager_task(times_out())
        assert not asyncio.current_task().cancelling()
    run(main())


def test_the_task_has_a_context_of_its_own():
    async def main():
        async def sets():
            VAR.set("task's")
            await asyncio.sleep(0)
            return VAR.get()

        assert await eager_task(sets()) == "task's"
        assert VAR.get() == "caller's"
    run(main())
