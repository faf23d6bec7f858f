"""Tasks whose first step runs at once, in the caller's turn of the event loop.

A task made by `asyncio.create_task` starts on the loop's next turn: every callback made
ready meanwhile runs first, and a poll of the sockets comes between (30-50 µs on a 2-core
machine). A turn's model request went out two such hops after its `send` frame was read
(the frame's handler, the turn's job). Python 3.12's eager tasks run the first step at
once; `eager_task` is that, on 3.11 too: the coroutine's first step runs now as the new
task (`current_task()` is it, in its own copy of the context, so `asyncio.timeout` and
context variables work as in any task), and the task goes on from where the step stopped.
"""

import asyncio
import contextvars
import sys
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


def eager_task(coro: Coroutine[Any, Any, T], name: str | None = None) -> "asyncio.Task[T]":
    """A task of `coro` whose first step (up to its first wait) has run when this returns."""
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):
        return asyncio.Task(coro, loop=loop, name=name, eager_start=True)
    context = contextvars.copy_context()
    started = _Started(coro)
    task = loop.create_task(started, name=name, context=context)
    context.run(_first_step, loop, task, started)
    return task


def _first_step(loop: asyncio.AbstractEventLoop, task: "asyncio.Task[Any]", started: "_Started[Any]") -> None:
    """Take the coroutine's first step as `task` (the running task, if any, steps aside)."""
    caller = asyncio.current_task(loop)
    if caller is not None:
        asyncio.tasks._leave_task(loop, caller)
    asyncio.tasks._enter_task(loop, task)
    try:
        started.step()
    finally:
        asyncio.tasks._leave_task(loop, task)
        if caller is not None:
            asyncio.tasks._enter_task(loop, caller)


class _Started(Coroutine[Any, Any, T]):
    """A coroutine whose first step was taken before its task ran it: the task's first
    `send` gets what that step ended with (the future it waits on, or its outcome, raised);
    everything after goes to the coroutine itself."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self._coro = coro
        #: What the first step yielded, or the exception it ended with (StopIteration too).
        self._first: tuple[Any, BaseException | None] | None = None

    def step(self) -> None:
        try:
            self._first = (self._coro.send(None), None)
        except BaseException as exc:  # its outcome: the task's own first step raises it
            self._first = (None, exc)

    def send(self, value: Any) -> Any:
        first, self._first = self._first, None
        if first is None:
            return self._coro.send(value)
        yielded, ended = first
        if ended is not None:
            raise ended
        return yielded

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        """An exception into the coroutine where it waits (a cancel before the task's first
        turn cancels what the first step waits on too, as a task's cancel does)."""
        first, self._first = self._first, None
        if first is not None:
            yielded, ended = first
            if ended is not None:  # the coroutine has ended: its outcome stands
                raise ended
            thrown = typ if val is None else val
            if isinstance(yielded, asyncio.Future) and isinstance(thrown, asyncio.CancelledError):
                yielded.cancel()
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)

    def close(self) -> None:
        self._first = None
        self._coro.close()

    def __await__(self) -> Generator[Any, None, T]:
        raise TypeError("an eagerly started coroutine is run by its task, not awaited")
