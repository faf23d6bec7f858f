"""The LMDB store: sessions and their append-only histories, in one environment under
`$XDG_DATA_HOME/ctxkeep/store` (its databases are listed in environment.py).

The `Store` is built in layers, one module each: environment.py (the LMDB
environment, transactions, migrations, backups), sessions.py, history.py (the one
message-append primitive), context.py (the active context and compaction
commits), snapshots.py, caches.py (calibrations, embeddings), search_index.py (a word
index of every message, kept as messages are stored).
"""

from ctxkeep.daemon.store.caches import Caches
from ctxkeep.daemon.store.errors import (
    AmbiguousSession, ContextChanged, NameTaken, NoSuchSnapshot, StoreError, StoreTooNew,
    UnknownSession,
)
from ctxkeep.daemon.store.search_index import Searching
from ctxkeep.daemon.store.snapshots import Snapshots

__all__ = ["AmbiguousSession", "ContextChanged", "NameTaken", "NoSuchSnapshot", "Store",
           "StoreError", "StoreTooNew", "UnknownSession"]


class Store(Snapshots, Caches, Searching):
    """Sessions and messages in one LMDB environment, opened once per process."""
