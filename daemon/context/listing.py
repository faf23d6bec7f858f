"""`session.list`'s sessions, encoded once and kept until the store commits or a
session's busy state changes.

With many sessions and many clients, the list is the largest reply asked for most
often; decoding every session record, building its `SessionInfo` and encoding it again
for every request made it the slowest. The encoded list goes into the reply as
`msgspec.Raw`, which the encoder copies as it is.
"""

from collections.abc import Callable

import msgspec

from ctxkeep.daemon.context import reliability
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.shown import session_info
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import encode
from ctxkeep.protocol.structs import SessionInfo


def shown(record: SessionRecord, busy: bool = False) -> SessionInfo:
    """The session as clients see it, its reliability score included."""
    return session_info(record, busy, reliability.score(record.parameter_size, record.compactions))


class SessionListing:
    """The sessions as `session.list` shows them, most recently updated first."""

    def __init__(self, store: Store, busy: Callable[[], frozenset[str]]) -> None:
        self.store = store
        self.busy = busy
        self._key: tuple[int, frozenset[str]] | None = None
        self._encoded = msgspec.Raw(b"[]")

    def encoded(self) -> msgspec.Raw:
        """The JSON array of every session's `SessionInfo`, rebuilt only when stale."""
        # The key is read before the sessions: a commit landing in between makes the next
        # call rebuild (the store bumps its count after each commit), never serve stale data.
        key = (self.store.commits, self.busy())
        if key != self._key:
            busy = key[1]
            self._encoded = msgspec.Raw(encode([shown(s, busy=s.id in busy) for s in self.store.sessions.all()]))
            self._key = key
        return self._encoded
