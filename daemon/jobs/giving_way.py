"""Background work that gives way while turns start: from a turn's prompt being built to
its first token, embedding the passages of earlier messages would take the event loop (its
request to the embedding model sent beside the turn's) and the model server from the
turn's time to its first token. It waits for `clear()` before each batch; work of one
step (freeing what is no longer kept) is handed to `then`, which needs no task."""

import asyncio
from collections.abc import Callable


class GivingWay:
    """How many turns are starting now; `clear()` returns once none is."""

    def __init__(self) -> None:
        self._starting = 0
        self._clear = asyncio.Event()
        self._clear.set()
        #: What runs once no turn is starting (`then`).
        self._then: list[Callable[[], object]] = []

    def starting(self) -> Callable[[], None]:
        """A turn starts; returns what says it has started (its first token came, or it
        ended before one): safe to call more than once."""
        self._starting += 1
        self._clear.clear()
        done = False

        def started() -> None:
            nonlocal done
            if not done:
                done = True
                self._starting -= 1
                if not self._starting:
                    self._clear.set()
                    self._run_then()
        return started

    def then(self, callback: Callable[[], object]) -> None:
        """Have the event loop call `callback` soon once no turn is starting (from the loop's
        next turn on: not inside the step that gave a turn its first token)."""
        self._then.append(callback)
        if not self._starting:
            self._run_then()

    def _run_then(self) -> None:
        loop = asyncio.get_running_loop()
        for callback in self._then:
            loop.call_soon(callback)
        self._then.clear()

    async def clear(self) -> None:
        """Return once no turn is starting."""
        await self._clear.wait()
