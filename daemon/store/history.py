"""The append-only history: one message-append primitive, pages, recovery, file references."""

import asyncio
import struct
import time
from collections.abc import Callable, Iterable
from typing import Any

import lmdb

from ctxkeep.protocol.structs import Goals
from ctxkeep.daemon.store.records import (
    ActiveContext, Calibration, FileRefRecord, MessageRecord, NewMessage, SessionRecord,
)
from ctxkeep.daemon.store import search_index
from ctxkeep.daemon.store.errors import UnknownSession
from ctxkeep.daemon.store.sessions import Sessions
from ctxkeep.daemon.store.environment import _message_key, _prefix


class History(Sessions):
    """The append-only history: one message-append primitive, pages, recovery, file references."""

    def _active(self, txn: lmdb.Transaction, session_id: str) -> ActiveContext:
        raw = txn.get(session_id.encode(), db=self.dbs["active"])
        return self._active_dec.decode(raw) if raw else ActiveContext()

    def append(self, session_id: str, messages: Iterable[NewMessage], **how: Any
               ) -> tuple[SessionRecord, list[MessageRecord]]:
        """Append messages to the history in one transaction (see `appending`)."""
        return self.write(self.appending(session_id, messages, **how))

    def append_async(self, session_id: str, messages: Iterable[NewMessage], **how: Any
                     ) -> "asyncio.Future[tuple[SessionRecord, list[MessageRecord]]]":
        """`append`, queued at once for the writer thread's next grouped commit (off the
        event loop); the future settles once it is synced."""
        return self.writer.submit(self.appending(session_id, messages, **how))

    def appending(self, session_id: str, messages: Iterable[NewMessage], *,
                  activate: Iterable[int] = (), activate_seqs: Iterable[int] = (),
                  token_count: int | None = None, exact: bool = True, pending: bool = False,
                  answered: Iterable[int] = (), calibrations: Iterable[tuple[str, Calibration]] = (),
                  anchor: tuple[int, list[float], str, list[float]] | None = None,
                  goals: Goals | None = None,
                  recalled_tokens: int | None = None
                  ) -> Callable[[lmdb.Transaction], tuple[SessionRecord, list[MessageRecord]]]:
        """The one message-append primitive, as a transaction function.

        `activate_seqs` (messages already stored) and then the messages at the
        positions `activate` in `messages` join the end of the active context;
        `token_count`, when given, becomes the session's count (Ollama's exact count,
        or with `exact=False` an estimate). With `pending`, the new messages are
        questions awaiting their answer, not yet in the search index (the commit that
        `accepted` waits for writes as little as it can); `answered` seqs leave the
        pending list and join the index;
        `calibrations` (key, record) and `goals` are saved in the same transaction (one
        sync for an answer and all it changed); `anchor` (the exact count, the features of
        the prompt it counted, the model, the features of its recall block) becomes the
        session's anchor for estimates.
        """
        batch = list(messages)
        activate = set(activate)
        earlier = list(activate_seqs)
        done = set(answered)
        saved = list(calibrations)

        def append(txn: lmdb.Transaction) -> tuple[SessionRecord, list[MessageRecord]]:
            record = self._get(txn, session_id)
            if record is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            now = time.time()
            stored: list[MessageRecord] = []
            joining = list(earlier)
            for position, new in enumerate(batch):
                message = self._put_message(txn, record, new, now, indexed=not pending)
                if position in activate:
                    joining.append(message.seq)
                if pending:
                    record.pending.append(message.seq)
                stored.append(message)
            if done:
                for seq in record.pending:
                    if seq in done:
                        self._index_question(txn, session_id, seq)
                record.pending = [s for s in record.pending if s not in done]
            if joining or goals is not None:  # else the context state is left unread
                active = self._active(txn, session_id)
                active.seqs.extend(joining)
                if goals is not None:
                    active.goals = goals
                txn.put(session_id.encode(), self._enc.encode(active), db=self.dbs["active"])
            if token_count is not None:
                record.token_count = token_count
                record.tokens_exact = exact
            for key, calibration in saved:
                txn.put(key.encode(), self._enc.encode(calibration), db=self.dbs["calibration"])
            if anchor is not None:
                (record.anchor_tokens, record.anchor_features, record.anchor_model,
                 record.anchor_recall) = anchor
            if recalled_tokens is not None:
                record.recalled_tokens = recalled_tokens
            record.updated = now
            self._put(txn, record)
            return record, stored
        return append

    def _put_message(self, txn: lmdb.Transaction, session: SessionRecord, new: NewMessage,
                     now: float, indexed: bool = True) -> MessageRecord:
        """The one way a message joins a history: the next seq, its file references recorded,
        its words in the search index (a pending question's later: `_index_question`)."""
        message = new.record(session.next_seq, now)
        key = _message_key(session.id, message.seq)
        txn.put(key, self._enc.encode(message), db=self.dbs["messages"], overwrite=False)
        if indexed:
            search_index.add(txn, self.dbs["search"], session.id, message.seq, message.content)
        for index, f in enumerate(x for x in new.files if not x.error):
            ref = FileRefRecord(message_seq=message.seq, path=f.path, real_path=f.real_path,
                                mode=f.mode, tokens=f.tokens, sha256=f.sha256,
                                mtime=f.mtime, size=f.size)
            txn.put(key + struct.pack(">H", index), self._enc.encode(ref), db=self.dbs["file_refs"])
        session.next_seq += 1
        session.message_count += 1
        return message

    def _index_question(self, txn: lmdb.Transaction, session_id: str, seq: int) -> None:
        """A question leaving the pending list joins the search index."""
        raw = txn.get(_message_key(session_id, seq), db=self.dbs["messages"])
        if raw is not None:
            search_index.add(txn, self.dbs["search"], session_id, seq,
                             self._message_dec.decode(raw).content)

    def recover(self, error: str) -> list[tuple[str, list[int]]]:
        """Start-up: every question a crash left without an answer gets an interrupted,
        empty answer (`error`), and leaves the pending list. Returns (session, seqs) done."""
        def fix(txn: lmdb.Transaction) -> list[tuple[str, list[int]]]:
            out = []
            for _, raw in list(txn.cursor(db=self.dbs["sessions"]).iternext()):
                session = self._session_dec.decode(raw)
                if not session.pending:
                    continue
                now = time.time()
                for seq in session.pending:
                    self._index_question(txn, session.id, seq)
                    self._put_message(txn, session, NewMessage(
                        role="assistant", content="", status="interrupted", error=error,
                        reply_to=seq), now)
                out.append((session.id, list(session.pending)))
                session.pending = []
                self._put(txn, session)
            return out
        return self.write(fix)

    def history(self, session_id: str, start: int = 0, limit: int = 100
                ) -> tuple[list[MessageRecord], int | None, int]:
        """Up to `limit` messages from sequence `start`: (messages, next start or None, total)."""
        def page(txn: lmdb.Transaction) -> tuple[list[MessageRecord], int | None, int]:
            record = self._get(txn, session_id)
            if record is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            out: list[MessageRecord] = []
            cursor = txn.cursor(db=self.dbs["messages"])
            prefix = _prefix(session_id)
            if cursor.set_range(_message_key(session_id, start)):
                for key, value in cursor:
                    if not key.startswith(prefix) or len(out) == limit:
                        break
                    out.append(self._message_dec.decode(value))
            nxt = out[-1].seq + 1 if out and out[-1].seq + 1 < record.next_seq else None
            return out, nxt, record.message_count
        return self.read(page)

    def active_page(self, session_id: str, start: int, limit: int
                    ) -> tuple[list[MessageRecord], int | None, int]:
        """A page of the active context in prompt order, from the message `start` (a seq;
        0: the beginning): (messages, the seq that starts the next page or None, how many
        are active). The context's positions are kept until the next commit, so paging
        through a large context seeks instead of reading it whole for every page."""
        kept = self._active_index.get(session_id)
        if kept is None or kept[0] != self.commits:
            seqs = self.context(session_id).seqs
            kept = (self.commits, seqs, {seq: i for i, seq in enumerate(seqs)})
            self._active_index = {session_id: kept}  # one session's at a time
        _, seqs, position = kept
        at = position.get(start, 0 if start == 0 else len(seqs))
        page = seqs[at:at + limit]
        after = at + len(page)
        return self.messages(session_id, page), (seqs[after] if after < len(seqs) else None), len(seqs)

    def active_messages(self, session_id: str) -> list[MessageRecord]:
        """The messages of the session's active context, oldest first."""
        return self.read(lambda txn: self._messages(txn, session_id, self._active(txn, session_id).seqs,
                                                    cached=True))

    def _messages(self, txn: lmdb.Transaction, session_id: str, seqs: Iterable[int],
                  cached: bool = False) -> list[MessageRecord]:
        """Messages by seq (missing ones left out); `cached` (read transactions only) takes
        and keeps decoded messages in the message cache."""
        known = self.message_cache.of(session_id) if cached else {}
        out = []
        for seq in seqs:
            found = known.get(seq)
            if found is None:
                raw = txn.get(_message_key(session_id, seq), db=self.dbs["messages"])
                if raw is None:
                    continue
                found = self._message_dec.decode(raw)
                if cached:
                    known[seq] = found
            out.append(found)
        return out

    def file_refs(self, session_id: str) -> list[FileRefRecord]:
        """Every recorded expansion of a file reference in the session, oldest first."""
        return self._scan("file_refs", session_id, self._file_ref_dec)

    # -- context state, snapshots, embeddings ---------------------------------------

    def messages(self, session_id: str, seqs: Iterable[int]) -> list[MessageRecord]:
        """Messages by sequence number (missing ones left out)."""
        return self.read(lambda txn: self._messages(txn, session_id, seqs, cached=True))

    def view(self, session_id: str) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        """The session, its context state and its active messages, in one read."""
        def read(txn: lmdb.Transaction) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
            record = self._get(txn, session_id)
            if record is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            context = self._active(txn, session_id)
            return record, context, self._messages(txn, session_id, context.seqs, cached=True)
        return self.read(read)
