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

The `Store` is built in layers, one module each: environment.py (the LMDB
environment, transactions, migrations, backups), sessions.py, history.py (the one
message-append primitive), context.py (the active context and compaction
commits), snapshots.py, caches.py (calibrations, embeddings).
"""

from ctxkeep.daemon.store.caches import Caches
from ctxkeep.daemon.store.errors import (
    AmbiguousSession, ContextChanged, NameTaken, NoSuchSnapshot, StoreError, StoreTooNew,
    UnknownSession,
)
from ctxkeep.daemon.store.snapshots import Snapshots

__all__ = ["AmbiguousSession", "ContextChanged", "NameTaken", "NoSuchSnapshot", "Store",
           "StoreError", "StoreTooNew", "UnknownSession"]


class Store(Snapshots, Caches):
    """Sessions and messages in one LMDB environment, opened once per process."""
