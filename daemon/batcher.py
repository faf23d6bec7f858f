"""Streamed text in batches: one event about every 30 ms instead of one per token."""

import time
from collections.abc import Callable


class TextBatcher:
    """Collects text pieces and emits them joined, at most once per interval.

    The first piece goes out at once (time to first token is not delayed);
    later pieces wait until the interval has passed since the last emit, and
    `flush()` sends whatever remains.
    """

    def __init__(self, interval_s: float, emit: Callable[[int, str], None]) -> None:
        self.interval = interval_s
        self.emit = emit
        self.index = 0
        self._pending: list[str] = []
        self._last = float("-inf")

    def add(self, text: str) -> None:
        self._pending.append(text)
        if time.monotonic() - self._last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.emit(self.index, "".join(self._pending))
            self.index += 1
            self._pending.clear()
            self._last = time.monotonic()
