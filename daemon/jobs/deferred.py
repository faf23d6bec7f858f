"""Work that starts when first asked for: a turn's question is committed once its model
request is out, so that the writer thread does not take the GIL while it is being sent."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Deferred(Generic[T]):
    """`future` is the result of `make()`, which runs from the first `start()` on (later
    calls change nothing). Call from the event loop."""

    def __init__(self, make: Callable[[], Awaitable[T]]) -> None:
        self.future: "asyncio.Future[T]" = asyncio.get_running_loop().create_future()
        self._make: Callable[[], Awaitable[T]] | None = make

    @property
    def started(self) -> bool:
        """Whether the work has started."""
        return self._make is None

    def start(self) -> "asyncio.Future[T]":
        """Start the work unless it has started; returns `future`."""
        if self._make is not None:
            make, self._make = self._make, None
            asyncio.ensure_future(make()).add_done_callback(self._settle)
        return self.future

    def _settle(self, task: "asyncio.Future[T]") -> None:
        if self.future.done():
            return
        if task.cancelled():
            self.future.cancel()
        elif task.exception() is not None:
            self.future.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            self.future.set_result(task.result())
