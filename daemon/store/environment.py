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
(LMDB's default `sync=True`). A full map is grown and the write retried. The
turn's writes go through `writer` (writer.py): committed in a thread, grouped, so
the event loop never waits for the disk.
"""

import functools
import logging
import os
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import lmdb
import msgspec

from ctxkeep.daemon.store.migrations import MIGRATIONS, SCHEMA_VERSION
from ctxkeep.daemon.store.records import (
    ActiveContext, Calibration, CompactionRecord, FileRefRecord, MessageRecord, SessionRecord, SnapshotRecord,
)
from ctxkeep.daemon.store.errors import StoreError, StoreTooNew
from ctxkeep.daemon.store.message_cache import MessageCache
from ctxkeep.daemon.store.writer import GroupWriter

log = logging.getLogger(__name__)
T = TypeVar("T")
E = TypeVar("E", bound="Environment")
_SEQ = struct.Struct(">Q")
#: Free space a new store needs before it is created (LMDB maps its file sparsely, and a
#: write into a mapped page on a full disk kills the process with SIGBUS).
_MIN_FREE = 32 << 20
_DATABASES = ("meta", "sessions", "names", "messages", "active", "compactions", "calibration",
              "file_refs", "snapshots", "embeddings", "search")


def _message_key(session_id: str, seq: int) -> bytes:
    return session_id.encode() + b"/" + _SEQ.pack(seq)


def _prefix(session_id: str) -> bytes:
    return session_id.encode() + b"/"


class Environment:
    """The LMDB environment: opening (with migrations), transactions, backups, scans."""

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
        #: Commits made (each one sync), by any thread.
        self.commits = 0
        self.writer = GroupWriter(self.env, self.write)
        #: Messages decoded by reads, kept (they never change).
        self.message_cache = MessageCache()
        #: One session's active context positions, as of a commit count (History.active_page).
        self._active_index: dict[str, tuple[int, list[int], dict[int, int]]] = {}
        self._upgrade()

    @classmethod
    def open(cls: type[E], path: Path, map_size: int = 64 << 20) -> E:
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
        """Finish the writes in flight, then close the environment."""
        self.writer.close()
        self.env.close()

    def write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run `fn` in one write transaction, growing the map and retrying when full.

        Any other LMDB failure (a full disk, an I/O error) aborts the
        transaction, so nothing is half-written, and becomes a StoreError.
        """
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    result = fn(txn)
                self.commits += 1
                return result
            except lmdb.MapFullError:
                size = self.env.info()["map_size"] * 2
                log.info("store map full, growing it to %d MiB", size >> 20)
                self.env.set_mapsize(size)
            except lmdb.Error as exc:
                raise StoreError(f"the store at {self.path} could not write: {exc}") from exc

    async def off_loop(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` (a method of this store that writes) run by the writer
        thread: the event loop goes on while it commits and syncs."""
        return await self.writer.call(functools.partial(method, *args, **kwargs))

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
