"""Sessions and their unique names."""

import secrets
import time
from collections.abc import Callable

import lmdb

from ctxkeep.daemon.store.records import ActiveContext, SessionRecord
from ctxkeep.daemon.store.errors import UnknownSession, AmbiguousSession, NameTaken
from ctxkeep.daemon.store.environment import Environment, _prefix
from ctxkeep.daemon.store import search_index


class Sessions(Environment):
    """Sessions and their unique names."""

    def _get(self, txn: lmdb.Transaction, session_id: str) -> SessionRecord | None:
        raw = txn.get(session_id.encode(), db=self.dbs["sessions"])
        return self._session_dec.decode(raw) if raw else None

    def _put(self, txn: lmdb.Transaction, record: SessionRecord) -> None:
        txn.put(record.id.encode(), self._enc.encode(record), db=self.dbs["sessions"])

    def _resolve(self, txn: lmdb.Transaction, ref: str) -> SessionRecord:
        record = self._get(txn, ref)
        if record is None:
            by_name = txn.get(ref.encode(), db=self.dbs["names"])
            record = self._get(txn, by_name.decode()) if by_name else None
        if record is None:
            matches = [key for key, _ in txn.cursor(db=self.dbs["sessions"]).iternext()
                       if key.startswith(ref.encode())] if len(ref) >= 4 else []
            if len(matches) > 1:
                raise AmbiguousSession(f"{ref!r} is the start of {len(matches)} session ids: "
                                       "give more of the id")
            record = self._get(txn, matches[0].decode()) if matches else None
        if record is None:
            raise UnknownSession(f"no session with id or name {ref!r}: "
                                 "`ctxkeep sessions` lists them")
        return record

    def session(self, ref: str) -> SessionRecord:
        """The session whose id, name or unique id prefix (4+ characters) is `ref`."""
        return self.read(lambda txn: self._resolve(txn, ref))

    def session_count(self) -> int:
        """How many sessions there are (without reading them)."""
        return self.read(lambda txn: txn.stat(self.dbs["sessions"])["entries"])

    def sessions(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        def collect(txn: lmdb.Transaction) -> list[SessionRecord]:
            cursor = txn.cursor(db=self.dbs["sessions"])
            return [self._session_dec.decode(value) for _, value in cursor.iternext()]
        return sorted(self.read(collect), key=lambda s: s.updated, reverse=True)

    def create_session(self, *, name: str, model: str, system: str, options: dict,
                       num_ctx: int, context_length: int = 0, parameter_size: str = "",
                       token_estimate: int = 0) -> SessionRecord:
        """A new, empty session. An empty name becomes `chat-N`, N the first free number
        past the number of sessions."""
        def create(txn: lmdb.Transaction) -> SessionRecord:
            names = self.dbs["names"]
            chosen = name
            if not chosen:  # chat-N, N past the number of sessions: free at once, usually
                n = txn.stat(self.dbs["sessions"])["entries"] + 1
                while txn.get(f"chat-{n}".encode(), db=names):
                    n += 1
                chosen = f"chat-{n}"
            elif txn.get(chosen.encode(), db=names):
                raise NameTaken(f"a session named {chosen!r} exists already: choose another name")
            now = time.time()
            record = SessionRecord(id=secrets.token_hex(6), name=chosen, model=model,
                                   system=system, options=options, num_ctx=num_ctx,
                                   context_length=context_length, parameter_size=parameter_size,
                                   created=now, updated=now,
                                   token_count=token_estimate, tokens_exact=False)
            self._put(txn, record)
            txn.put(chosen.encode(), record.id.encode(), db=names)
            txn.put(record.id.encode(), self._enc.encode(ActiveContext()), db=self.dbs["active"])
            return record
        return self.write(create)

    def update_session(self, session_id: str, change: Callable[[SessionRecord], None]) -> SessionRecord:
        """Apply `change` to the session's record in one transaction; renames keep names unique."""
        def update(txn: lmdb.Transaction) -> SessionRecord:
            record = self._get(txn, session_id)
            if record is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            old_name = record.name
            change(record)
            if record.name != old_name:
                if txn.get(record.name.encode(), db=self.dbs["names"]):
                    raise NameTaken(f"a session named {record.name!r} exists already")
                txn.delete(old_name.encode(), db=self.dbs["names"])
                txn.put(record.name.encode(), record.id.encode(), db=self.dbs["names"])
            record.updated = time.time()
            self._put(txn, record)
            return record
        return self.write(update)

    def delete_session(self, session_id: str) -> None:
        """Remove a session, its history and its active context."""
        def delete(txn: lmdb.Transaction) -> None:
            record = self._get(txn, session_id)
            if record is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            prefix = _prefix(session_id)
            cursor = txn.cursor(db=self.dbs["messages"])
            if cursor.set_range(prefix):  # its words leave the search index first
                for key, raw in cursor:
                    if not key.startswith(prefix):
                        break
                    m = self._message_dec.decode(raw)
                    search_index.remove(txn, self.dbs["search"], session_id, m.seq, m.content)
            for db in ("messages", "compactions", "file_refs", "snapshots"):
                cursor = txn.cursor(db=self.dbs[db])
                if cursor.set_range(prefix):
                    while cursor.key().startswith(prefix):
                        if not cursor.delete():
                            break
            txn.delete(record.name.encode(), db=self.dbs["names"])
            txn.delete(session_id.encode(), db=self.dbs["active"])
            txn.delete(session_id.encode(), db=self.dbs["sessions"])
        self.write(delete)
        self.message_cache.drop(session_id)

    # -- messages -------------------------------------------------------------
