"""The active context (what the model sees) and compaction commits with their audit trail."""

import time
from collections.abc import Callable, Iterable

import lmdb

from ctxkeep.daemon.store.records import (
    ActiveContext, CompactionRecord, MessageRecord, NewMessage, SessionRecord,
)
from ctxkeep.daemon.store.errors import UnknownSession, ContextChanged
from ctxkeep.daemon.store.history import History
from ctxkeep.daemon.store.environment import _SEQ, _message_key, _prefix


class Contexts(History):
    """The active context (what the model sees) and compaction commits with their audit trail."""

    def compact(self, session_id: str, *, expected: list[int], summary: NewMessage,
                keep: list[int], record: CompactionRecord, token_estimate: int
                ) -> tuple[SessionRecord, MessageRecord]:
        """Replace the active context by [summary, *keep] in one transaction.

        The summary joins the history; nothing leaves it. Refused with
        ContextChanged when the active context is no longer `expected`.
        """
        def apply(txn: lmdb.Transaction) -> tuple[SessionRecord, MessageRecord]:
            session = self._get(txn, session_id)
            if session is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            context = self._active(txn, session_id)
            if context.seqs != expected:
                raise ContextChanged("the session changed while its summary was written")
            now = time.time()
            message = self._put_message(txn, session, summary, now)
            context.seqs = [message.seq, *keep]
            context.file_summaries = [s for s in context.file_summaries if s in keep]
            txn.put(session_id.encode(), self._enc.encode(context), db=self.dbs["active"])
            record.summary_seq = record.at_seq = message.seq
            self._put_compaction(txn, session_id, record)
            session.compactions += 1
            session.token_count = token_estimate
            session.tokens_exact = False
            session.updated = now
            self._put(txn, session)
            return session, message
        return self.write(apply)

    def _put_compaction(self, txn: lmdb.Transaction, session_id: str, record: CompactionRecord) -> None:
        """Add an audit record, keyed by time (ns): never overwritten, in order."""
        cursor = txn.cursor(db=self.dbs["compactions"])
        stamp = time.time_ns()
        prefix = _prefix(session_id)
        # the session's last record: just before the first key past its range ("/" < "0")
        moved = cursor.prev() if cursor.set_range(session_id.encode() + b"0") else cursor.last()
        if moved and cursor.key().startswith(prefix):
            stamp = max(stamp, _SEQ.unpack(cursor.key()[len(prefix):])[0] + 1)
        txn.put(_message_key(session_id, stamp), self._enc.encode(record), db=self.dbs["compactions"])

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's compaction history, oldest first."""
        return self._scan("compactions", session_id, self._compaction_dec)

    def context(self, session_id: str) -> ActiveContext:
        """The session's whole context state."""
        return self.read(lambda txn: self._active(txn, session_id))

    def update_context(self, session_id: str, change: Callable[[ActiveContext, SessionRecord], None],
                       *, expected: list[int] | None = None, messages: Iterable[NewMessage] = (),
                       audit: CompactionRecord | None = None
                       ) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        """Change the context state (and the session record) in one transaction.

        `messages` are appended to the history first; `change` then sees them in
        the session's next_seq. Refused with ContextChanged when the active
        messages are no longer `expected`.
        """
        batch = list(messages)

        def apply(txn: lmdb.Transaction) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
            session = self._get(txn, session_id)
            if session is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            context = self._active(txn, session_id)
            if expected is not None and context.seqs != expected:
                raise ContextChanged("the session changed while it was being compacted")
            now = time.time()
            stored = [self._put_message(txn, session, new, now) for new in batch]
            change(context, session)
            session.updated = now
            if audit is not None:
                audit.at_seq = session.next_seq
                self._put_compaction(txn, session_id, audit)
            txn.put(session_id.encode(), self._enc.encode(context), db=self.dbs["active"])
            self._put(txn, session)
            return session, context, stored
        return self.write(apply)

    def set_estimate(self, session_id: str, tokens: int, exact: bool = False) -> SessionRecord:
        """The prompt changed since the last exact count: record an estimate in its place
        (`exact`: the prompt is the one counted, whose count this is)."""
        def change(record: SessionRecord) -> None:
            record.token_count = tokens
            record.tokens_exact = exact
        return self.update_session(session_id, change)
