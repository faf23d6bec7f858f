"""Sessions and their unique names."""

import secrets
import time
from collections.abc import Callable

from ctxkeep.daemon.store import codecs, keys, word_index
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.errors import AmbiguousSession, NameTaken, UnknownSession
from ctxkeep.daemon.store.message_cache import MessageCache
from ctxkeep.daemon.store.prompt_count import PromptCount
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.txn import Txn

#: The per-session databases a deleted session leaves.
PER_SESSION = ("messages", "compactions", "file_refs", "snapshots", "drafts")


class Sessions:
    """Session records and their unique names."""

    def __init__(self, env: Environment, message_cache: MessageCache) -> None:
        self.env = env
        self.dbs = env.dbs
        self._message_cache = message_cache

    def get(self, ref: str) -> SessionRecord:
        """The session whose id, name or unique id prefix (4+ characters) is `ref`."""
        return self.env.read(lambda txn: self._resolve(txn, ref))

    def _resolve(self, txn: Txn, ref: str) -> SessionRecord:
        raw = txn.get(keys.session_key(ref), db=self.dbs["sessions"])
        if raw is None:
            by_name = txn.get(ref.encode(), db=self.dbs["names"])
            raw = txn.get(by_name, db=self.dbs["sessions"]) if by_name else None
        if raw is None and len(ref) >= 4:
            matches = [key for key, _ in txn.cursor(db=self.dbs["sessions"]).iternext()
                       if key.startswith(ref.encode())]
            if len(matches) > 1:
                raise AmbiguousSession(f"{ref!r} is the start of {len(matches)} session ids: "
                                       "give more of the id")
            raw = txn.get(matches[0], db=self.dbs["sessions"]) if matches else None
        if raw is None:
            raise UnknownSession(f"no session with id or name {ref!r}: "
                                 "`ctxkeep sessions` lists them")
        return codecs.session(raw)

    def count(self) -> int:
        """How many sessions there are (without reading them)."""
        return self.env.read(lambda txn: txn.stat(self.dbs["sessions"])["entries"])

    def all(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        def collect(txn: Txn) -> list[SessionRecord]:
            cursor = txn.cursor(db=self.dbs["sessions"])
            return [codecs.session(value) for _, value in cursor.iternext()]
        return sorted(self.env.read(collect), key=lambda s: s.updated, reverse=True)

    def create(self, *, name: str, model: str, system: str, options: dict,
               num_ctx: int, context_length: int = 0, parameter_size: str = "",
               token_estimate: int = 0, branched_from: str = "", branched_at: int = -1,
               tools: list | None = None) -> SessionRecord:
        """A new, empty session. An empty name becomes `chat-N`, N the first free number
        past the number of sessions."""
        def create(txn: Txn) -> SessionRecord:
            now = time.time()
            record = SessionRecord(id=secrets.token_hex(6), name=name, model=model,
                                   system=system, options=options, num_ctx=num_ctx,
                                   context_length=context_length, parameter_size=parameter_size,
                                   created=now, updated=now,
                                   count=PromptCount(tokens=token_estimate, exact=False),
                                   branched_from=branched_from, branched_at=branched_at,
                                   tools=tools or [])
            self.add(txn, record, ActiveContext())
            return record
        return self.env.write(create)

    def add(self, txn: Txn, record: SessionRecord, context: ActiveContext) -> None:
        """Store a new session's record and context state, its name made unique: an empty
        one becomes `chat-N` (N past the number of sessions); a taken one is refused."""
        names = self.dbs["names"]
        if not record.name:  # chat-N, N past the number of sessions: free at once, usually
            n = txn.stat(self.dbs["sessions"])["entries"] + 1
            while txn.get(f"chat-{n}".encode(), db=names):
                n += 1
            record.name = f"chat-{n}"
        elif txn.get(record.name.encode(), db=names):
            raise NameTaken(f"a session named {record.name!r} exists already: choose another name")
        self.env.put_session(txn, record)
        txn.put(record.name.encode(), record.id.encode(), db=names)
        self.env.put_context(txn, record.id, context)

    def update(self, session_id: str, change: Callable[[SessionRecord], None]) -> SessionRecord:
        """Apply `change` to the session's record in one transaction; renames keep names unique."""
        def update(txn: Txn) -> SessionRecord:
            record = self.env.session_in(txn, session_id)
            old_name = record.name
            change(record)
            if record.name != old_name:
                if txn.get(record.name.encode(), db=self.dbs["names"]):
                    raise NameTaken(f"a session named {record.name!r} exists already")
                txn.delete(old_name.encode(), db=self.dbs["names"])
                txn.put(record.name.encode(), record.id.encode(), db=self.dbs["names"])
            record.updated = time.time()
            self.env.put_session(txn, record)
            return record
        return self.env.write(update)

    def delete(self, session_id: str) -> None:
        """Remove a session, its history (and its words from the search index), its
        context state, compactions, file references and snapshots."""
        def delete(txn: Txn) -> None:
            record = self.env.session_in(txn, session_id)
            start = keys.prefix(session_id)
            cursor = txn.cursor(db=self.dbs["messages"])
            if cursor.set_range(start):  # its words leave the search index first
                for key, raw in cursor:
                    if not key.startswith(start):
                        break
                    m = codecs.message(raw)
                    word_index.remove(txn, self.dbs["search"], session_id, m.seq, m.content)
            for db in PER_SESSION:
                cursor = txn.cursor(db=self.dbs[db])
                if cursor.set_range(start):
                    while cursor.key().startswith(start):
                        if not cursor.delete():
                            break
            txn.delete(record.name.encode(), db=self.dbs["names"])
            txn.delete(keys.session_key(session_id), db=self.dbs["active"])
            txn.delete(keys.session_key(session_id), db=self.dbs["sessions"])
        self.env.write(delete)
        self._message_cache.drop(session_id)
