"""Decoded messages of the sessions read most recently, by sequence number.

A stored message never changes (the history is append-only), so once decoded it can be
handed out again: a turn on a long session decodes only the messages it has not seen.
The cache is filled from read transactions only: a write that aborts must not leave a
message behind that was never stored.
"""

from collections import OrderedDict

from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.daemon.store.shown import message_info
from ctxkeep.protocol import encode


class MessageCache:
    """Per session, its decoded messages by seq; the least recently read sessions leave."""

    def __init__(self, sessions: int = 16) -> None:
        self._sessions = sessions
        self._by_session: OrderedDict[str, dict[int, MessageRecord]] = OrderedDict()
        #: Messages as the protocol shows them (`MessageInfo`), JSON-encoded, by seq.
        self._encoded: dict[str, dict[int, bytes]] = {}

    def of(self, session_id: str) -> dict[int, MessageRecord]:
        """The session's cached messages (a dict the caller may add to)."""
        known = self._by_session.get(session_id)
        if known is None:
            known = self._by_session[session_id] = {}
            if len(self._by_session) > self._sessions:
                gone, _ = self._by_session.popitem(last=False)
                self._encoded.pop(gone, None)
        else:
            self._by_session.move_to_end(session_id)
        return known

    def encoded_infos(self, session_id: str, messages: list[MessageRecord]) -> list[bytes]:
        """Each stored message's `MessageInfo` as JSON, encoded once (history pages)."""
        self.of(session_id)  # the session is in use: keep it
        known = self._encoded.setdefault(session_id, {})
        out = []
        for m in messages:
            found = known.get(m.seq)
            if found is None:
                found = known[m.seq] = encode(message_info(m))
            out.append(found)
        return out

    def drop(self, session_id: str) -> None:
        self._by_session.pop(session_id, None)
        self._encoded.pop(session_id, None)
