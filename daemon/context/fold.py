"""Folds over a session's active messages, kept so that a turn pays for its new messages
only.

A turn's prompt, its features and the budget's segments are each a fold over the active
messages in order. Between two turns the active context usually only grew at its end
(the question and the answer), so each fold keeps, per session, the sequence numbers it
folded, the settings it folded them under and the state it reached; a context that
starts with the same messages under the same settings is folded on from there. Anything
else (a compaction, a restored snapshot, other settings) folds from the start. Stored
messages never change, so a sequence number stands for its message.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from ctxkeep.daemon.store.records import MessageRecord

S = TypeVar("S")


class PrefixFold(Generic[S]):
    """`step` folded over messages from `start()`, resumed from the longest fold kept for
    the same session and `key` whose messages begin the new ones. `step` must return a
    new state (or change only a state that `copy` made), so that a kept state is never
    changed afterwards. Only stored messages (seq >= 0) are kept: a projection's unstored
    ones (an answer not yet written, a summary planned) are folded on top each time."""

    def __init__(self, start: Callable[[], S], step: Callable[[S, MessageRecord, Hashable], S],
                 copy: Callable[[S], S] = lambda state: state, sessions: int = 64,
                 per_session: int = 6) -> None:
        self._start = start
        self._step = step
        self._copy = copy
        self._sessions = sessions
        self._per_session = per_session
        self._kept: OrderedDict[str, list[tuple[Hashable, list[int], S]]] = OrderedDict()
        self._lock = threading.Lock()
        #: Messages folded, and folds that resumed (to see that turns do resume).
        self.steps = 0
        self.resumed = 0

    def fold(self, session_id: str, key: Hashable, messages: Sequence[MessageRecord]) -> S:
        """The state after every message of `messages`, in order (callable from worker
        threads too: a large context is folded off the event loop)."""
        if not messages:  # (a new session's: nothing to resume or keep)
            return self._start()
        seqs = [m.seq for m in messages]
        stored = next((i for i, seq in enumerate(seqs) if seq < 0), len(seqs))
        with self._lock:
            kept = self._kept.setdefault(session_id, [])
            self._kept.move_to_end(session_id)
            best = max((entry for entry in kept if entry[0] == key and len(entry[1]) <= stored
                        and seqs[:len(entry[1])] == entry[1]), key=lambda e: len(e[1]), default=None)
            if best is not None:
                self.resumed += 1
                kept.remove(best)
                kept.append(best)  # most recently used last
        done, state = (0, self._start()) if best is None else (len(best[1]), best[2])
        if best is not None and done < len(seqs):
            state = self._copy(state)
        for m in messages[done:stored]:
            state = self._step(state, m, key)
        if stored > done:
            with self._lock:
                kept = self._kept.setdefault(session_id, [])
                kept.append((key, seqs[:stored], state))
                del kept[:-self._per_session]
            if stored < len(seqs):
                state = self._copy(state)
        for m in messages[stored:]:
            state = self._step(state, m, key)
        self.steps += len(seqs) - done
        with self._lock:
            if len(self._kept) > self._sessions:
                self._kept.popitem(last=False)
        return state
