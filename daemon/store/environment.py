"""The LMDB environment: opening (with migrations), transactions, backups, and the
records every layer of the store reads and writes inside its transactions (a session's
record, its context state). The databases and their keys are listed in keys.py.

Every write is one transaction, committed and synced before the call returns (LMDB's
default `sync=True`). A full map is grown and the write retried. The turn's writes go
through `writer` (writer.py): committed in a thread, grouped, so the event loop never
waits for the disk.
"""

import functools
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import lmdb

from ctxkeep.daemon.store import codecs, keys
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.errors import StoreError, StoreTooNew, UnknownSession
from ctxkeep.daemon.store.migrations import MIGRATIONS, SCHEMA_VERSION
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.shown import session_info
from ctxkeep.daemon.store.txn import Txn
from ctxkeep.daemon.store.writer import GroupWriter
from ctxkeep.protocol.limits import NumCtx

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Free space a new store needs before it is created (LMDB maps its file sparsely, and a
#: write into a mapped page on a full disk kills the process with SIGBUS).
MIN_FREE_BYTES = 32 << 20


class Environment:
    """The LMDB environment, its databases, its transactions and its shared records."""

    def __init__(self, path: Path, map_size: int = 64 << 20) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.env = lmdb.open(str(path), map_size=map_size, max_dbs=len(keys.DATABASES) + 8,
                             subdir=True, sync=True, metasync=True)
        self.dbs = {name: self.env.open_db(name.encode()) for name in keys.DATABASES}
        #: Commits made (each one sync), by any thread.
        self.commits = 0
        self.writer = GroupWriter(self.env, self.write)
        self._upgrade()

    @classmethod
    def open(cls, path: Path, map_size: int = 64 << 20) -> "Environment":
        """Open (or create) the store, with every start-up obstacle as one clear StoreError."""
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {path}: {exc.strerror}: "
                             "choose another with store_path in config.toml") from None
        new = not (path / "data.mdb").exists()
        if new and shutil.disk_usage(path).free < MIN_FREE_BYTES:
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

    def close(self) -> None:
        """Finish the writes in flight, then close the environment."""
        self.writer.close()
        self.env.close()

    # -- transactions ---------------------------------------------------------

    def write(self, fn: Callable[[Txn], T]) -> T:
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
        """`method(*args, **kwargs)` (a store method that writes) run by the writer thread:
        the event loop goes on while it commits and syncs."""
        return await self.writer.call(functools.partial(method, *args, **kwargs))

    def read(self, fn: Callable[[Txn], T]) -> T:
        """Run `fn` in a read transaction."""
        with self.env.begin() as txn:
            return fn(txn)

    def scan(self, db: str, session_id: str, decode: Callable[[bytes], T]) -> list[T]:
        """Every record of one session in a database of per-session keys, in key order."""
        def collect(txn: Txn) -> list[T]:
            cursor = txn.cursor(db=self.dbs[db])
            start, out = keys.prefix(session_id), []
            if cursor.set_range(start):
                for key, value in cursor:
                    if not key.startswith(start):
                        break
                    out.append(decode(value))
            return out
        return self.read(collect)

    # -- the records every layer shares ----------------------------------------

    def session_in(self, txn: Txn, session_id: str) -> SessionRecord:
        """The session's record; UnknownSession when it is gone."""
        raw = txn.get(keys.session_key(session_id), db=self.dbs["sessions"])
        if raw is None:
            raise UnknownSession(f"session {session_id!r} no longer exists")
        return codecs.session(raw)

    def put_session(self, txn: Txn, record: SessionRecord) -> None:
        codecs.in_range(record.num_ctx, NumCtx, "num_ctx")
        codecs.checked(session_info(record), codecs.session_info)  # what clients read of it, in range
        txn.put(keys.session_key(record.id), codecs.checked(record, codecs.session), db=self.dbs["sessions"])

    def context_in(self, txn: Txn, session_id: str) -> ActiveContext:
        """The session's context state (empty when none was stored)."""
        raw = txn.get(keys.session_key(session_id), db=self.dbs["active"])
        return codecs.context(raw) if raw else ActiveContext()

    def put_context(self, txn: Txn, session_id: str, context: ActiveContext) -> None:
        txn.put(keys.session_key(session_id), codecs.encode(context), db=self.dbs["active"])

    # -- schema and backups ---------------------------------------------------

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

            def apply(txn: Txn, step=step) -> None:
                step.apply(txn, self.dbs)
                txn.put(b"schema_version", str(step.to_version).encode(), db=self.dbs["meta"])

            self.write(apply)
            log.info("store schema migrated to %d: %s", step.to_version, step.description)
        if self.schema_version() != SCHEMA_VERSION:
            raise StoreError(f"no migration path from schema {found} to {SCHEMA_VERSION}")

    def backup(self, label: str) -> Path:
        """A consistent, compacted copy of the store in `<store>/../backups/<label>-<time>`."""
        target = self.path.parent / "backups" / f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True, mode=0o700)
        self.env.copy(str(target), compact=True)
        return target
