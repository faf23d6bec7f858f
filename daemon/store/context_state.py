"""The active context (what the model sees) and compaction commits with their audit trail."""

import time
from collections.abc import Callable, Iterable, Sequence

from ctxkeep.daemon.store import codecs, keys
from ctxkeep.daemon.store.context_records import ActiveContext, CompactionRecord
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.errors import ContextChanged
from ctxkeep.daemon.store.history import History
from ctxkeep.daemon.store.records import MessageRecord, NewMessage, SessionRecord
from ctxkeep.daemon.store.txn import Txn


class ContextState:
    """The active context (what the model sees) and compaction commits with their audit trail."""

    def __init__(self, env: Environment, history: History) -> None:
        self.env = env
        self.dbs = env.dbs
        self.history = history

    def get(self, session_id: str) -> ActiveContext:
        """The session's whole context state."""
        return self.env.read(lambda txn: self.env.context_in(txn, session_id))

    def compact(self, session_id: str, *, expected: list[int], summary: NewMessage,
                keep: list[int], record: CompactionRecord, token_estimate: int
                ) -> tuple[SessionRecord, MessageRecord]:
        """Replace the active context by [summary, *keep] in one transaction.

        The summary joins the history; nothing leaves it. Refused with
        ContextChanged when the active context is no longer `expected`.
        """
        def apply(txn: Txn) -> tuple[SessionRecord, MessageRecord]:
            session = self.env.session_in(txn, session_id)
            context = self.env.context_in(txn, session_id)
            if context.seqs != expected:
                raise ContextChanged("the session changed while its summary was written")
            now = time.time()
            message = self.history.put_message(txn, session, summary, now)
            context.seqs = [message.seq, *keep]
            context.file_summaries = [s for s in context.file_summaries if s in keep]
            self.env.put_context(txn, session_id, context)
            record.summary_seq = record.at_seq = message.seq
            self._put_compaction(txn, session_id, record)
            session.compactions += 1
            session.count = session.count.estimated(token_estimate)
            session.updated = now
            self.env.put_session(txn, session)
            return session, message
        return self.env.write(apply)

    def update(self, session_id: str, change: Callable[[ActiveContext, SessionRecord], None],
               *, expected: list[int] | None = None, messages: Iterable[NewMessage] = (),
               audit: CompactionRecord | None = None
               ) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        """Change the context state (and the session record) in one transaction.

        `messages` are appended to the history first; `change` then sees them in
        the session's next_seq. Refused with ContextChanged when the active
        messages are no longer `expected`.
        """
        batch = list(messages)

        def apply(txn: Txn) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
            session = self.env.session_in(txn, session_id)
            context = self.env.context_in(txn, session_id)
            if expected is not None and context.seqs != expected:
                raise ContextChanged("the session changed while it was being compacted")
            now = time.time()
            stored = [self.history.put_message(txn, session, new, now) for new in batch]
            change(context, session)
            session.updated = now
            if audit is not None:
                audit.at_seq = session.next_seq
                self._put_compaction(txn, session_id, audit)
            self.env.put_context(txn, session_id, context)
            self.env.put_session(txn, session)
            return session, context, stored
        return self.env.write(apply)

    def _put_compaction(self, txn: Txn, session_id: str, record: CompactionRecord) -> None:
        """Add an audit record, keyed by time (ns): never overwritten, in order."""
        cursor = txn.cursor(db=self.dbs["compactions"])
        stamp = time.time_ns()
        within = keys.prefix(session_id)
        # the session's last record: just before the first key past its range ("/" < "0")
        moved = cursor.prev() if cursor.set_range(session_id.encode() + b"0") else cursor.last()
        if moved and cursor.key().startswith(within):
            stamp = max(stamp, keys.number_of(cursor.key()) + 1)
        txn.put(keys.numbered(session_id, stamp), codecs.encode(record), db=self.dbs["compactions"])

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's compaction history, oldest first."""
        return self.env.scan("compactions", session_id, codecs.compaction)

    def set_estimate(self, session_id: str, tokens: int, exact: bool = False) -> SessionRecord:
        """The prompt changed since the last exact count: record an estimate in its place
        (`exact`: the prompt is the one counted, whose count this is)."""
        def change(txn: Txn) -> SessionRecord:
            record = self.env.session_in(txn, session_id)
            record.count = record.count.estimated(tokens, exact)
            record.updated = time.time()
            self.env.put_session(txn, record)
            return record
        return self.env.write(change)

    def reopen(self, session_id: str, question: int, back: Sequence[int],
               edited: NewMessage | None = None) -> tuple[SessionRecord, list[MessageRecord]]:
        """A regenerate's commit: the exchange `back` (the last question and its answer; or
        none, for a failed turn's question) leaves the end of the active context, staying
        in history, and `question` waits for an answer again, as a question just asked
        does; or, `edited`, that new question (stored here) in its place.
        Refused with ContextChanged when they are no longer where they were."""
        def apply(txn: Txn) -> tuple[SessionRecord, list[MessageRecord]]:
            session = self.env.session_in(txn, session_id)
            context = self.env.context_in(txn, session_id)
            kept = context.seqs[:len(context.seqs) - len(back)]
            if context.seqs[len(kept):] != list(back) or question in kept or session.pending:
                raise ContextChanged("the session's last exchange changed: regenerate again")
            context.seqs = kept
            self.env.put_context(txn, session_id, context)
            session.updated = time.time()
            if edited is not None:  # its words join the search index when its turn ends
                asked = self.history.put_message(txn, session, edited, session.updated, indexed=False)
            else:
                (asked,) = self.history.messages_in(txn, session_id, [question])
            session.pending = [asked.seq]
            self.env.put_session(txn, session)
            return session, [asked]
        return self.env.write(apply)

    def switch_answer(self, session_id: str, question: int, current: int, chosen: int) -> None:
        """Put answer `chosen` in place of `current`, the last question's answer in the
        active context. Refused with ContextChanged when that is no longer the end of it."""
        def apply(txn: Txn) -> None:
            context = self.env.context_in(txn, session_id)
            if context.seqs[-2:] != [question, current]:
                raise ContextChanged("the session's last exchange changed: choose again")
            context.seqs = [*context.seqs[:-1], chosen]
            self.env.put_context(txn, session_id, context)
        self.env.write(apply)

