"""The LMDB store: sessions and their append-only histories.

One environment under `$XDG_DATA_HOME/ctxkeep/store`. Named databases:

- `meta`: `schema_version`.
- `sessions`: session id -> SessionRecord.
- `names`: session name -> session id (names are unique).
- `messages`: session id + `/` + big-endian u64 sequence -> MessageRecord.
- `active`: session id -> ActiveContext (what the model sees).
- `compactions`: session id + `/` + big-endian u64 -> CompactionRecord (the audit trail).
- `calibration`: model name -> Calibration (token estimates fitted to exact counts).
- `file_refs`: session id + `/` + big-endian u64 message seq + u16 index -> FileRefRecord.
- `snapshots`: session id + `/` + big-endian u64 time (ns) -> SnapshotRecord.
- `embeddings`: model + `/` + sha256 of the text -> list of floats (a cache).

Every write is one transaction, committed and synced before the call returns
(LMDB's default `sync=True`). A full map is grown and the write retried.
"""

import logging
import os
import secrets
import shutil
import struct
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import lmdb
import msgspec

from ctxkeep.daemon.store.migrations import MIGRATIONS, SCHEMA_VERSION
from ctxkeep.daemon.store.records import (
    ActiveContext, Calibration, CompactionRecord, FileRefRecord, MessageRecord, NewMessage,
    SessionRecord, SnapshotRecord,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
_SEQ = struct.Struct(">Q")
#: Free space a new store needs before it is created (LMDB maps its file sparsely, and a
#: write into a mapped page on a full disk kills the process with SIGBUS).
_MIN_FREE = 32 << 20
_DATABASES = ("meta", "sessions", "names", "messages", "active", "compactions", "calibration",
              "file_refs", "snapshots", "embeddings")


class StoreError(Exception):
    """The store cannot do what was asked; the message says why."""


class UnknownSession(StoreError):
    """No session has that id or name."""


class AmbiguousSession(StoreError):
    """A reference matches more than one session."""


class NameTaken(StoreError):
    """Another session already has that name."""


class StoreTooNew(StoreError):
    """The store was written by a newer ctxkeep."""


class ContextChanged(StoreError):
    """The active context changed while a compaction was being prepared."""


class NoSuchSnapshot(StoreError):
    """No snapshot has that id (or the id is not one)."""


def _snapshot_stamp(snapshot_id: str) -> int:
    """A snapshot id (hex nanoseconds) as its key's number."""
    try:
        stamp = int(snapshot_id, 16)
    except ValueError:
        stamp = -1
    if not 0 <= stamp < 1 << 64 or not snapshot_id.isalnum():
        raise NoSuchSnapshot(f"{snapshot_id!r} is not a snapshot id: "
                             "`ctxkeep snapshot SESSION list` lists them")
    return stamp


def _message_key(session_id: str, seq: int) -> bytes:
    return session_id.encode() + b"/" + _SEQ.pack(seq)


def _prefix(session_id: str) -> bytes:
    return session_id.encode() + b"/"


class Store:
    """Sessions and messages in one LMDB environment, opened once per process."""

    def __init__(self, path: Path, map_size: int = 64 << 20) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.env = lmdb.open(str(path), map_size=map_size, max_dbs=len(_DATABASES) + 8,
                             subdir=True, sync=True, metasync=True)
        self.dbs = {name: self.env.open_db(name.encode()) for name in _DATABASES}
        self._enc = msgspec.msgpack.Encoder()
        self._session_dec = msgspec.msgpack.Decoder(SessionRecord)
        self._message_dec = msgspec.msgpack.Decoder(MessageRecord)
        self._active_dec = msgspec.msgpack.Decoder(ActiveContext)
        self._compaction_dec = msgspec.msgpack.Decoder(CompactionRecord)
        self._calibration_dec = msgspec.msgpack.Decoder(Calibration)
        self._file_ref_dec = msgspec.msgpack.Decoder(FileRefRecord)
        self._snapshot_dec = msgspec.msgpack.Decoder(SnapshotRecord)
        self._vector_dec = msgspec.msgpack.Decoder(list[float])
        self._upgrade()

    @classmethod
    def open(cls, path: Path, map_size: int = 64 << 20) -> "Store":
        """Open (or create) the store, with every start-up obstacle as one clear StoreError."""
        new = not (path / "data.mdb").exists()
        if new and shutil.disk_usage(path).free < _MIN_FREE:
            raise StoreError(f"no room for a new store in {path} "
                             f"({shutil.disk_usage(path).free >> 20} MiB free): free disk space, "
                             "or set store_path in config.toml to another disk")
        if not os.access(path, os.W_OK):
            raise StoreError(f"the store folder {path} is not writable (a read-only mount?): "
                             "make it writable, or set store_path in config.toml")
        try:
            return cls(path, map_size)
        except lmdb.Error as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}: check the disk "
                             "(space, permissions), or restore a backup from "
                             f"{path.parent / 'backups'}") from None

    # -- plumbing -------------------------------------------------------------

    def close(self) -> None:
        """Close the environment."""
        self.env.close()

    def write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run `fn` in one write transaction, growing the map and retrying when full.

        Any other LMDB failure (a full disk, an I/O error) aborts the
        transaction, so nothing is half-written, and becomes a StoreError.
        """
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    return fn(txn)
            except lmdb.MapFullError:
                size = self.env.info()["map_size"] * 2
                log.info("store map full, growing it to %d MiB", size >> 20)
                self.env.set_mapsize(size)
            except lmdb.Error as exc:
                raise StoreError(f"the store at {self.path} could not write: {exc}") from exc

    def read(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run `fn` in a read transaction."""
        with self.env.begin() as txn:
            return fn(txn)

    def schema_version(self) -> int:
        """The schema version recorded in `meta` (0 for an empty store)."""
        raw = self.read(lambda txn: txn.get(b"schema_version", db=self.dbs["meta"]))
        return int(raw) if raw else 0

    def _upgrade(self) -> None:
        """Bring the store to SCHEMA_VERSION, backing it up before any step."""
        found = self.schema_version()
        if found > SCHEMA_VERSION:
            self.close()
            raise StoreTooNew(
                f"the store at {self.path} has schema version {found}, but this ctxkeepd "
                f"knows up to {SCHEMA_VERSION}: upgrade ctxkeep, or move the store away"
            )
        if found == SCHEMA_VERSION:
            return
        is_new = self.read(lambda txn: txn.stat(self.dbs["sessions"])["entries"] == 0)
        if found == 0 and is_new:
            self.write(lambda txn: txn.put(b"schema_version", str(SCHEMA_VERSION).encode(),
                                           db=self.dbs["meta"]))
            return
        backup = self.backup(f"schema-v{found}")
        log.info("upgrading store schema %d -> %d (backup at %s)", found, SCHEMA_VERSION, backup)
        for step in MIGRATIONS:
            if step.from_version < found:
                continue

            def apply(txn: lmdb.Transaction, step=step) -> None:
                step.apply(txn, self.dbs)
                txn.put(b"schema_version", str(step.to_version).encode(), db=self.dbs["meta"])

            self.write(apply)
            log.info("store schema migrated to %d: %s", step.to_version, step.description)
        if self.schema_version() != SCHEMA_VERSION:
            raise StoreError(f"no migration path from schema {found} to {SCHEMA_VERSION}")

    def backup(self, label: str) -> Path:
        """A consistent, compacted copy of the store in `<store>-backups/<label>-<time>`."""
        target = self.path.parent / "backups" / f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True, mode=0o700)
        self.env.copy(str(target), compact=True)
        return target

    # -- sessions -------------------------------------------------------------

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
                       num_ctx: int, context_length: int = 0, token_estimate: int = 0) -> SessionRecord:
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
                                   context_length=context_length, created=now, updated=now,
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

    # -- messages -------------------------------------------------------------

    def append(self, session_id: str, messages: Iterable[NewMessage], *,
               activate: Iterable[int] = (), activate_seqs: Iterable[int] = (),
               token_count: int | None = None, pending: bool = False,
               answered: Iterable[int] = (), calibration: tuple[str, Calibration] | None = None
               ) -> tuple[SessionRecord, list[MessageRecord]]:
        """Append messages to the history in one transaction.

        `activate_seqs` (messages already stored) and then the messages at the
        positions `activate` in `messages` join the end of the active context;
        `token_count`, when given, becomes the session's exact count. With
        `pending`, the new messages are questions awaiting their answer;
        `answered` seqs leave the pending list; `calibration` (model, record) is saved in
        the same transaction (one sync for an answer and what it taught the estimator).
        """
        batch = list(messages)
        activate = set(activate)
        earlier = list(activate_seqs)
        done = set(answered)

        def append(txn: lmdb.Transaction) -> tuple[SessionRecord, list[MessageRecord]]:
            record = self._get(txn, session_id)
            if record is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            now = time.time()
            stored: list[MessageRecord] = []
            active = self._active(txn, session_id)
            active.seqs.extend(earlier)
            for position, new in enumerate(batch):
                message = self._put_message(txn, record, new, now)
                if position in activate:
                    active.seqs.append(message.seq)
                if pending:
                    record.pending.append(message.seq)
                stored.append(message)
            if done:
                record.pending = [s for s in record.pending if s not in done]
            if activate or earlier:
                txn.put(session_id.encode(), self._enc.encode(active), db=self.dbs["active"])
            if token_count is not None:
                record.token_count = token_count
                record.tokens_exact = True
            if calibration is not None:
                txn.put(calibration[0].encode(), self._enc.encode(calibration[1]),
                        db=self.dbs["calibration"])
            record.updated = now
            self._put(txn, record)
            return record, stored
        return self.write(append)

    def _put_message(self, txn: lmdb.Transaction, session: SessionRecord, new: NewMessage,
                     now: float) -> MessageRecord:
        """The one way a message joins a history: the next seq, its file references recorded."""
        message = new.record(session.next_seq, now)
        key = _message_key(session.id, message.seq)
        txn.put(key, self._enc.encode(message), db=self.dbs["messages"], overwrite=False)
        for index, f in enumerate(x for x in new.files if not x.error):
            ref = FileRefRecord(message_seq=message.seq, path=f.path, real_path=f.real_path,
                                mode=f.mode, tokens=f.tokens, sha256=f.sha256,
                                mtime=f.mtime, size=f.size)
            txn.put(key + struct.pack(">H", index), self._enc.encode(ref), db=self.dbs["file_refs"])
        session.next_seq += 1
        session.message_count += 1
        return message

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
                    self._put_message(txn, session, NewMessage(
                        role="assistant", content="", status="interrupted", error=error,
                        reply_to=seq), now)
                out.append((session.id, list(session.pending)))
                session.pending = []
                self._put(txn, session)
            return out
        return self.write(fix)

    def _active(self, txn: lmdb.Transaction, session_id: str) -> ActiveContext:
        raw = txn.get(session_id.encode(), db=self.dbs["active"])
        return self._active_dec.decode(raw) if raw else ActiveContext()

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

    def active_messages(self, session_id: str) -> list[MessageRecord]:
        """The messages of the session's active context, oldest first."""
        return self.read(lambda txn: self._messages(txn, session_id, self._active(txn, session_id).seqs))

    def _messages(self, txn: lmdb.Transaction, session_id: str, seqs: Iterable[int]) -> list[MessageRecord]:
        out = []
        for seq in seqs:
            raw = txn.get(_message_key(session_id, seq), db=self.dbs["messages"])
            if raw is not None:
                out.append(self._message_dec.decode(raw))
        return out

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
            record.summary_seq = message.seq
            self._put_compaction(txn, session_id, record)
            session.compactions += 1
            session.token_count = token_estimate
            session.tokens_exact = False
            session.updated = now
            self._put(txn, session)
            return session, message
        return self.write(apply)

    def _scan(self, db: str, session_id: str, decoder: msgspec.msgpack.Decoder) -> list:
        """Every record of one session in a database keyed by session id + `/`, in key order."""
        def collect(txn: lmdb.Transaction) -> list:
            cursor = txn.cursor(db=self.dbs[db])
            prefix, out = _prefix(session_id), []
            if cursor.set_range(prefix):
                for key, value in cursor:
                    if not key.startswith(prefix):
                        break
                    out.append(decoder.decode(value))
            return out
        return self.read(collect)

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

    def calibration(self, model: str) -> Calibration | None:
        raw = self.read(lambda txn: txn.get(model.encode(), db=self.dbs["calibration"]))
        return self._calibration_dec.decode(raw) if raw else None

    def save_calibration(self, model: str, calibration: Calibration) -> None:
        self.write(lambda txn: txn.put(model.encode(), self._enc.encode(calibration),
                                       db=self.dbs["calibration"]))

    def file_refs(self, session_id: str) -> list[FileRefRecord]:
        """Every recorded expansion of a file reference in the session, oldest first."""
        return self._scan("file_refs", session_id, self._file_ref_dec)

    # -- context state, snapshots, embeddings ---------------------------------------

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
                self._put_compaction(txn, session_id, audit)
            txn.put(session_id.encode(), self._enc.encode(context), db=self.dbs["active"])
            self._put(txn, session)
            return session, context, stored
        return self.write(apply)

    def set_estimate(self, session_id: str, tokens: int) -> SessionRecord:
        """The prompt changed since the last exact count: record an estimate in its place."""
        def change(record: SessionRecord) -> None:
            record.token_count = tokens
            record.tokens_exact = False
        return self.update_session(session_id, change)

    def messages(self, session_id: str, seqs: Iterable[int]) -> list[MessageRecord]:
        """Messages by sequence number (missing ones left out)."""
        return self.read(lambda txn: self._messages(txn, session_id, seqs))

    def save_snapshot(self, session_id: str, reason: str) -> SnapshotRecord:
        """Save the session's context state; returns the snapshot."""
        def save(txn: lmdb.Transaction) -> SnapshotRecord:
            session = self._get(txn, session_id)
            if session is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            stamp = time.time_ns()
            snapshot = SnapshotRecord(
                id=f"{stamp:x}", created=stamp / 1e9, reason=reason,
                context=self._active(txn, session_id), token_count=session.token_count,
                tokens_exact=session.tokens_exact, compactions=session.compactions,
                next_seq=session.next_seq)
            txn.put(_message_key(session_id, stamp), self._enc.encode(snapshot), db=self.dbs["snapshots"])
            return snapshot
        return self.write(save)

    def snapshots(self, session_id: str) -> list[SnapshotRecord]:
        """The session's snapshots, newest first."""
        return self._scan("snapshots", session_id, self._snapshot_dec)[::-1]

    def restore_snapshot(self, session_id: str, snapshot_id: str, *, undo: bool = False
                         ) -> tuple[SessionRecord, SnapshotRecord]:
        """Put a snapshot's messages, checkpoints and file summaries back. The history is
        not touched; turns that joined the active context after the snapshot stay (after
        the restored messages), and the goal record and pins stay as they are now (no
        compaction changes them, so undoing one must not lose later edits). With `undo`
        the snapshot is marked undone, so the next undo walks one compaction further back.
        The session's count becomes an estimate: call `set_estimate` after."""
        def restore(txn: lmdb.Transaction) -> tuple[SessionRecord, SnapshotRecord]:
            session = self._get(txn, session_id)
            if session is None:
                raise UnknownSession(f"session {session_id!r} no longer exists")
            key = _message_key(session_id, _snapshot_stamp(snapshot_id))
            raw = txn.get(key, db=self.dbs["snapshots"])
            if raw is None:
                raise NoSuchSnapshot(f"no snapshot {snapshot_id!r} in this session: "
                                     "`ctxkeep snapshot SESSION list` lists them")
            snapshot = self._snapshot_dec.decode(raw)
            current = self._active(txn, session_id)
            later = [s for s in current.seqs if snapshot.next_seq >= 0 and s >= snapshot.next_seq
                     and s not in snapshot.context.seqs]
            restored = msgspec.structs.replace(
                snapshot.context, seqs=[*snapshot.context.seqs, *later], goals=current.goals,
                pinned=current.pinned,
                file_summaries=[s for s in snapshot.context.file_summaries])
            txn.put(session_id.encode(), self._enc.encode(restored), db=self.dbs["active"])
            if undo:
                snapshot.undone = True
                txn.put(key, self._enc.encode(snapshot), db=self.dbs["snapshots"])
            session.token_count = snapshot.token_count
            session.tokens_exact = snapshot.tokens_exact and not later
            session.compactions = snapshot.compactions
            session.updated = time.time()
            self._put(txn, session)
            return session, snapshot
        return self.write(restore)

    def delete_snapshot(self, session_id: str, snapshot_id: str) -> SnapshotRecord:
        def delete(txn: lmdb.Transaction) -> SnapshotRecord:
            key = _message_key(session_id, _snapshot_stamp(snapshot_id))
            raw = txn.get(key, db=self.dbs["snapshots"])
            if raw is None:
                raise NoSuchSnapshot(f"no snapshot {snapshot_id!r} in this session: "
                                     "`ctxkeep snapshot SESSION list` lists them")
            txn.delete(key, db=self.dbs["snapshots"])
            return self._snapshot_dec.decode(raw)
        return self.write(delete)

    def embedding(self, model: str, digest: str) -> list[float] | None:
        raw = self.read(lambda txn: txn.get(f"{model}/{digest}".encode(), db=self.dbs["embeddings"]))
        return self._vector_dec.decode(raw) if raw else None

    def save_embeddings(self, model: str, vectors: dict[str, list[float]]) -> None:
        def save(txn: lmdb.Transaction) -> None:
            for digest, vector in vectors.items():
                txn.put(f"{model}/{digest}".encode(), self._enc.encode(vector), db=self.dbs["embeddings"])
        self.write(save)
