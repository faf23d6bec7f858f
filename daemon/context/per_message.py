"""What is computed from a stored message, kept by (session, seq): a stored message never
changes, so its features or word counts are computed once."""

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from ctxkeep.daemon.store.records import MessageRecord

T = TypeVar("T")


class PerMessage(Generic[T]):
    """`compute(message)` by (session, seq), least recently used out first; large enough
    for a 100,000-message context."""

    def __init__(self, compute: Callable[[MessageRecord], T], size: int = 1 << 17) -> None:
        self.compute = compute
        self.size = size
        self._cached: OrderedDict[tuple[str, int], T] = OrderedDict()

    def of(self, session_id: str, m: MessageRecord) -> T:
        if m.seq < 0:  # not stored (a projection): nothing to key it by
            return self.compute(m)
        key = (session_id, m.seq)
        found = self._cached.get(key)
        if found is None:
            found = self._cached[key] = self.compute(m)
            if len(self._cached) > self.size:
                self._cached.popitem(last=False)
        else:
            self._cached.move_to_end(key)
        return found
