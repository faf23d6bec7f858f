"""The append-only history: one message-append primitive, pages, recovery, file references."""

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ctxkeep.daemon.store import codecs, keys, word_index
from ctxkeep.daemon.store.context_records import Calibration
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.message_cache import MessageCache
from ctxkeep.daemon.store.prompt_count import Anchor, PromptCount
from ctxkeep.daemon.store.records import FileRefRecord, MessageRecord, NewMessage, SessionRecord, View
from ctxkeep.daemon.store.txn import Txn
from ctxkeep.protocol.goals import Goals

Appended = tuple[SessionRecord, list[MessageRecord]]


class History:
    """The append-only history: one message-append primitive, pages, recovery, file references."""

    def __init__(self, env: Environment, message_cache: MessageCache) -> None:
        self.env = env
        self.dbs = env.dbs
        #: Messages decoded by reads, kept (they never change).
        self.message_cache = message_cache
        #: One session's active context positions, as of a commit count (`active_page`).
        self._active_index: dict[str, tuple[int, list[int], dict[int, int]]] = {}

    def append(self, session_id: str, messages: Iterable[NewMessage], **how: Any) -> Appended:
        """Append messages to the history in one transaction (see `appending`)."""
        return self.env.write(self.appending(session_id, messages, **how))

    def append_async(self, session_id: str, messages: Iterable[NewMessage], **how: Any
                     ) -> "asyncio.Future[Appended]":
        """`append`, queued at once for the writer thread's next grouped commit (off the
        event loop); the future settles once it is synced."""
        return self.env.writer.submit(self.appending(session_id, messages, **how))

    def appending(self, session_id: str, messages: Iterable[NewMessage], *,
                  activate: Iterable[int] = (), activate_seqs: Iterable[int] = (), pending: bool = False,
                  answered: Iterable[int] = (), count: PromptCount | None = None, anchor: Anchor | None = None,
                  calibrations: Iterable[tuple[str, Calibration]] = (), goals: Goals | None = None,
                  ) -> Callable[[Txn], Appended]:
        """The one message-append primitive, as a transaction function.

        `activate_seqs` (messages already stored) and then the messages at the
        positions `activate` in `messages` join the end of the active context. With
        `pending`, the new messages are questions awaiting their answer, not yet in the
        search index (the commit that `accepted` waits for writes as little as it can);
        `answered` seqs leave the pending list and join the index. `count`, when given,
        becomes the session's prompt count (its cache figure joins the session's tally),
        `anchor` its anchor for estimates; `calibrations` (key, record) and `goals` are
        saved in the same transaction (one sync for an answer and all it changed).
        """
        batch, activate, already, answered = list(messages), set(activate), list(activate_seqs), set(answered)
        calibrations = list(calibrations)

        def append(txn: Txn) -> Appended:  # run again from the start when the store grows: no state kept
            record = self.env.session_in(txn, session_id)
            now = time.time()
            stored: list[MessageRecord] = []
            joining = list(already)
            for position, new in enumerate(batch):
                message = self.put_message(txn, record, new, now, indexed=not pending)
                if position in activate:
                    joining.append(message.seq)
                if pending:
                    record.pending.append(message.seq)
                stored.append(message)
            if answered:
                self._answered(txn, record, answered)
            if joining or goals is not None:  # else the context state is left unread
                context = self.env.context_in(txn, session_id)
                context.seqs.extend(joining)
                if goals is not None:
                    context.goals = goals
                self.env.put_context(txn, session_id, context)
            if count is not None:
                record.count, record.cache = count, record.cache.adding(count)
            if anchor is not None:
                record.anchor = anchor
            for key, calibration in calibrations:
                txn.put(keys.model_key(key), codecs.encode(calibration), db=self.dbs["calibration"])
            record.updated = now
            self.env.put_session(txn, record)
            return record, stored
        return append

    def _answered(self, txn: Txn, record: SessionRecord, answered: set[int]) -> None:
        """The `answered` questions leave the pending list and join the search index: their
        answers are stored now, and what streamed is in them (their drafts go)."""
        for seq in answered:
            txn.delete(keys.numbered(record.id, seq), db=self.dbs["drafts"])
        for seq in record.pending:
            if seq in answered:
                self._index_question(txn, record.id, seq)
        record.pending = [s for s in record.pending if s not in answered]

    def put_message(self, txn: Txn, session: SessionRecord, new: NewMessage,
                    now: float, indexed: bool = True) -> MessageRecord:
        """The one way a message joins a history: the next seq, its file references recorded,
        its words in the search index (a pending question's later: `_index_question`)."""
        message = new.record(session.next_seq, now)
        txn.put(keys.numbered(session.id, message.seq), codecs.checked(message, codecs.message),
                db=self.dbs["messages"], overwrite=False)
        if indexed:
            word_index.add(txn, self.dbs["search"], session.id, message.seq, message.content)
        for index, f in enumerate(x for x in new.files if not x.error):
            ref = FileRefRecord(message_seq=message.seq, path=f.path, real_path=f.real_path,
                                mode=f.mode, tokens=f.tokens, sha256=f.sha256,
                                mtime=f.mtime, size=f.size)
            txn.put(keys.file_ref_key(session.id, message.seq, index), codecs.encode(ref),
                    db=self.dbs["file_refs"])
        session.next_seq += 1
        session.message_count += 1
        return message

    def _index_question(self, txn: Txn, session_id: str, seq: int) -> None:
        """A question leaving the pending list joins the search index."""
        raw = txn.get(keys.numbered(session_id, seq), db=self.dbs["messages"])
        if raw is not None:
            word_index.add(txn, self.dbs["search"], session_id, seq, codecs.message(raw).content)

    def recover(self, error: str) -> list[tuple[str, list[int]]]:
        """Start-up: every question a crash left without an answer gets an interrupted
        answer (`error`) holding what its turn had streamed (its draft; empty if none), and
        leaves the pending list. Returns (session, seqs) done."""
        def fix(txn: Txn) -> list[tuple[str, list[int]]]:
            out = []
            for _, raw in list(txn.cursor(db=self.dbs["sessions"]).iternext()):
                session = codecs.session(raw)
                if not session.pending:
                    continue
                now = time.time()
                context = self.env.context_in(txn, session.id)
                for seq in session.pending:
                    self._index_question(txn, session.id, seq)
                    content, thinking = self._draft(txn, session.id, seq)
                    self.put_message(txn, session, NewMessage(
                        role="assistant", content=content, thinking=thinking, status="interrupted",
                        error=error, reply_to=seq), now)
                    context.seqs += self._replaced_exchange(txn, session, seq, context.seqs)
                self.env.put_context(txn, session.id, context)
                out.append((session.id, list(session.pending)))
                session.pending = []
                self.env.put_session(txn, session)
            return out
        return self.env.write(fix)

    def draft_in(self, txn: Txn, session_id: str, seq: int, content: str, thinking: str) -> None:
        """Save what the answer to question `seq` has streamed so far (its draft)."""
        txn.put(keys.numbered(session_id, seq), codecs.encode([content, thinking]), db=self.dbs["drafts"])

    def _draft(self, txn: Txn, session_id: str, seq: int) -> tuple[str, str]:
        """The draft of the answer to `seq` ("", "" when none), taken out of the store."""
        key = keys.numbered(session_id, seq)
        raw = txn.get(key, db=self.dbs["drafts"])
        if raw is None:
            return "", ""
        txn.delete(key, db=self.dbs["drafts"])
        try:
            content, thinking = codecs.draft(raw)
        except (msgspec.ValidationError, ValueError):
            return "", ""
        return content, thinking

    def _replaced_exchange(self, txn: Txn, session: SessionRecord, seq: int,
                           active: list[int]) -> list[int]:
        """A regenerated (or edited) question left pending by a crash: the exchange its turn
        took out of the active context (the question and its newest whole answer), to put
        back as a failed regenerate does; [] for any other question."""
        def message(at: int) -> MessageRecord | None:
            raw = txn.get(keys.numbered(session.id, at), db=self.dbs["messages"])
            return codecs.message(raw) if raw is not None else None
        asked = message(seq)
        question = asked.alternative_of if asked is not None and asked.alternative_of >= 0 else seq
        answers = [m for at in range(question + 1, session.next_seq) if (m := message(at)) is not None
                   and m.role == "assistant" and m.reply_to == question and m.status == "complete"]
        if not answers or question in active:
            return []
        return [question, answers[-1].seq]

    def page(self, session_id: str, start: int = 0, limit: int = 100
             ) -> tuple[list[MessageRecord], int | None, int]:
        """Up to `limit` messages from sequence `start`: (messages, next start or None, total)."""
        def page(txn: Txn) -> tuple[list[MessageRecord], int | None, int]:
            record = self.env.session_in(txn, session_id)
            out: list[MessageRecord] = []
            cursor = txn.cursor(db=self.dbs["messages"])
            within = keys.prefix(session_id)
            if cursor.set_range(keys.numbered(session_id, start)):
                for key, value in cursor:
                    if not key.startswith(within) or len(out) == limit:
                        break
                    out.append(codecs.message(value))
            nxt = out[-1].seq + 1 if out and out[-1].seq + 1 < record.next_seq else None
            return out, nxt, record.message_count
        return self.env.read(page)

    def active_page(self, session_id: str, start: int, limit: int
                    ) -> tuple[list[MessageRecord], int | None, int]:
        """A page of the active context in prompt order, from the message `start` (a seq;
        0: the beginning): (messages, the seq that starts the next page or None, how many
        are active). The context's positions are kept until the next commit, so paging
        through a large context seeks instead of reading it whole for every page."""
        kept = self._active_index.get(session_id)
        if kept is None or kept[0] != self.env.commits:
            seqs = self.env.read(lambda txn: self.env.context_in(txn, session_id)).seqs
            kept = (self.env.commits, seqs, {seq: i for i, seq in enumerate(seqs)})
            self._active_index = {session_id: kept}  # one session's at a time
        _, seqs, position = kept
        at = position.get(start, 0 if start == 0 else len(seqs))
        page = seqs[at:at + limit]
        after = at + len(page)
        return self.messages(session_id, page), (seqs[after] if after < len(seqs) else None), len(seqs)

    def active_messages(self, session_id: str) -> list[MessageRecord]:
        """The messages of the session's active context, oldest first."""
        return self.env.read(lambda txn: self.messages_in(
            txn, session_id, self.env.context_in(txn, session_id).seqs, cached=True))

    def messages(self, session_id: str, seqs: Iterable[int]) -> list[MessageRecord]:
        """Messages by sequence number (missing ones left out)."""
        return self.env.read(lambda txn: self.messages_in(txn, session_id, seqs, cached=True))

    def messages_in(self, txn: Txn, session_id: str, seqs: Iterable[int],
                    cached: bool = False) -> list[MessageRecord]:
        """Messages by seq (missing ones left out); `cached` (read transactions only) takes
        and keeps decoded messages in the message cache."""
        known = self.message_cache.of(session_id) if cached else {}
        out = []
        for seq in seqs:
            found = known.get(seq)
            if found is None:
                raw = txn.get(keys.numbered(session_id, seq), db=self.dbs["messages"])
                if raw is None:
                    continue
                found = codecs.message(raw)
                if cached:
                    known[seq] = found
            out.append(found)
        return out

    def file_refs(self, session_id: str) -> list[FileRefRecord]:
        """Every recorded expansion of a file reference in the session, oldest first."""
        return self.env.scan("file_refs", session_id, codecs.file_ref)

    def view(self, session_id: str) -> View:
        """The session, its context state and its active messages, in one read."""
        def read(txn: Txn) -> View:
            record = self.env.session_in(txn, session_id)
            context = self.env.context_in(txn, session_id)
            return View(record, context, self.messages_in(txn, session_id, context.seqs, cached=True))
        return self.env.read(read)
