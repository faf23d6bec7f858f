"""Streamed text in batches: one event about every 30 ms instead of one per token."""

import time
from collections.abc import Callable

#: The most a batch's text may take as JSON (the event bus sizes subscriber queues by it).
MAX_BATCH_BYTES = 4096
#: Characters per batch at most: JSON writes one character in at most 6 bytes (\\u0000).
MAX_BATCH_CHARS = MAX_BATCH_BYTES // 6


class TextBatcher:
    """Collects text pieces and emits them joined, at most once per interval.

    The first piece goes out at once (time to first token is not delayed);
    later pieces wait until the interval has passed since the last emit, or
    until `MAX_BATCH_CHARS` are waiting; `flush()` sends whatever remains, in
    batches of at most `MAX_BATCH_CHARS`.
    """

    def __init__(self, interval_s: float, emit: Callable[[int, str], object]) -> None:
        self.interval = interval_s
        self.emit = emit
        self.index = 0
        self._pending: list[str] = []
        self._chars = 0
        self._last = float("-inf")

    def add(self, text: str) -> None:
        self._pending.append(text)
        self._chars += len(text)
        if self._chars >= MAX_BATCH_CHARS or time.monotonic() - self._last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._chars = 0
        for start in range(0, len(text), MAX_BATCH_CHARS):
            self.emit(self.index, text[start:start + MAX_BATCH_CHARS])
            self.index += 1
        self._last = time.monotonic()
