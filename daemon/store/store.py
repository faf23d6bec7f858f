"""The LMDB store: one environment (environment.py; its layout in keys.py), and the
layers over it, each a member with one job:

- `sessions`: session records and their unique names (sessions.py);
- `history`: the append-only messages, their file references and search words, and the
  one message-append primitive (history.py);
- `context`: the active context, what the model sees, and compaction commits with their
  audit trail (context_state.py);
- `snapshots`: saved context states and restoring them (snapshots.py);
- `branches`: a new session holding another's history up to a message (branches.py);
- `search`: messages by their words (search.py over word_index.py);
- `caches`: calibrations and embeddings (caches.py);
- `images`: image bytes by content hash (images.py).

`Store` only opens, composes and closes them; the daemon's services take the whole `Store`
and reach the member they need (`store.history.append`), so what each touches reads at the call.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ctxkeep.daemon.store.branches import Branches
from ctxkeep.daemon.store.caches import Caches
from ctxkeep.daemon.store.context_state import ContextState
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.errors import (
    AmbiguousSession,
    ContextChanged,
    NameTaken,
    NoSuchSnapshot,
    StoreError,
    StoreTooNew,
    UnknownSession,
)
from ctxkeep.daemon.store.history import History
from ctxkeep.daemon.store.images import Images
from ctxkeep.daemon.store.message_cache import MessageCache
from ctxkeep.daemon.store.search import Search
from ctxkeep.daemon.store.sessions import Sessions
from ctxkeep.daemon.store.snapshots import Snapshots

__all__ = ["AmbiguousSession", "ContextChanged", "NameTaken", "NoSuchSnapshot", "Store",
           "StoreError", "StoreTooNew", "UnknownSession"]

T = TypeVar("T")


class Store:
    """Sessions and messages in one LMDB environment, opened once per process."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.path = env.path
        messages = MessageCache()
        self.sessions = Sessions(env, messages)
        self.history = History(env, messages)
        self.context = ContextState(env, self.history)
        self.snapshots = Snapshots(env, self.history)
        self.branches = Branches(env, self.sessions)
        self.search = Search(env)
        self.caches = Caches(env)
        self.images = Images(env)

    @classmethod
    def open(cls, path: Path, map_size: int = 64 << 20) -> "Store":
        """Open (or create) the store at `path`; every obstacle is one clear StoreError."""
        return cls(Environment.open(path, map_size))

    @property
    def commits(self) -> int:
        """Commits made so far, counted after each one lands: what a cache of reads keys on."""
        return self.env.commits

    async def off_loop(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A member's method that writes, run by the writer thread (the event loop goes on
        while it commits)."""
        return await self.env.off_loop(method, *args, **kwargs)

    def close(self) -> None:
        """Finish the writes in flight, then close the environment."""
        self.env.close()
