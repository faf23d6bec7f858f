"""What the handlers and the engine need of the store: the seam in front of LMDB.

`Store` (store.py) is the one implementation; the services, handlers and engine are
typed against this Protocol (mypy checks that `Store` satisfies it), so another
store, or a test double, needs only these members.
"""

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ctxkeep.daemon.store.message_cache import MessageCache
from ctxkeep.daemon.store.records import (
    ActiveContext, Calibration, CompactionRecord, FileRefRecord, MessageRecord, NewMessage,
    SessionRecord, SnapshotRecord,
)


T = TypeVar("T")

class SessionStore(Protocol):
    """Sessions, their histories and context state, snapshots and caches."""

    path: Path
    #: Decoded messages and their encoded `MessageInfo`s, kept (store/message_cache.py).
    message_cache: MessageCache
    #: Commits made so far, counted after each one lands: what a cache of reads keys on.
    commits: int

    def active_page(self, session_id: str, start: int, limit: int
                    ) -> tuple[list[MessageRecord], int | None, int]:
        """A page of the active context in prompt order from the message `start`:
        (messages, the next page's first seq or None, how many are active)."""

    def active_messages(self, session_id: str) -> list[MessageRecord]:
        """The messages of the session's active context, oldest first."""

    def append(self, session_id: str, messages: Iterable[NewMessage], **how: Any
               ) -> tuple[SessionRecord, list[MessageRecord]]:
        """Append messages to the history in one transaction (`appending` says how)."""

    def append_async(self, session_id: str, messages: Iterable[NewMessage], **how: Any
                     ) -> "asyncio.Future[tuple[SessionRecord, list[MessageRecord]]]":
        """`append`, queued at once to be committed off the event loop (grouped with other
        writes); the future settles once it is synced."""

    async def off_loop(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A method of this store that writes, run by the writer thread (the event loop
        goes on while it commits)."""

    def search(self, query: str, session_id: str = "", limit: int = 50
               ) -> tuple[list[tuple[str, MessageRecord]], int]:
        """The newest messages with every word of `query`, and how many match in all."""

    def view(self, session_id: str) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        """The session, its context state and its active messages, in one read."""

    def calibration(self, model: str) -> Calibration | None:
        ...

    def close(self) -> None:
        """Close the environment."""

    def compact(self, session_id: str, *, expected: list[int], summary: NewMessage,
                keep: list[int], record: CompactionRecord, token_estimate: int
                ) -> tuple[SessionRecord, MessageRecord]:
        """Replace the active context by [summary, *keep] in one transaction."""

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's compaction history, oldest first."""

    def context(self, session_id: str) -> ActiveContext:
        """The session's whole context state."""

    def create_session(self, *, name: str, model: str, system: str, options: dict,
                       num_ctx: int, context_length: int = 0, parameter_size: str = "",
                       token_estimate: int = 0) -> SessionRecord:
        """A new, empty session. An empty name becomes `chat-N`, N the first free number"""

    def delete_session(self, session_id: str) -> None:
        """Remove a session, its history and its active context."""

    def delete_snapshot(self, session_id: str, snapshot_id: str) -> SnapshotRecord:
        ...

    def embedding(self, model: str, digest: str) -> list[float] | None:
        ...

    def file_refs(self, session_id: str) -> list[FileRefRecord]:
        """Every recorded expansion of a file reference in the session, oldest first."""

    def history(self, session_id: str, start: int = 0, limit: int = 100
                ) -> tuple[list[MessageRecord], int | None, int]:
        ...

    def messages(self, session_id: str, seqs: Iterable[int]) -> list[MessageRecord]:
        """Messages by sequence number (missing ones left out)."""

    def recover(self, error: str) -> list[tuple[str, list[int]]]:
        """Start-up: every question a crash left without an answer gets an interrupted,"""

    def restore_snapshot(self, session_id: str, snapshot_id: str, *, undo: bool = False
                         ) -> tuple[SessionRecord, SnapshotRecord]:
        """Put a snapshot back: by id its context exactly, with `undo` taking back the
        compaction it was taken before (later turns kept)."""

    def save_calibration(self, model: str, calibration: Calibration) -> None:
        ...

    def save_embeddings(self, model: str, vectors: dict[str, list[float]]) -> None:
        ...

    def save_snapshot(self, session_id: str, reason: str, keep: int = 50) -> SnapshotRecord:
        """Save the session's context state; returns the snapshot."""

    def session(self, ref: str) -> SessionRecord:
        """The session whose id, name or unique id prefix (4+ characters) is `ref`."""

    def session_count(self) -> int:
        """How many sessions there are (without reading them)."""

    def sessions(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""

    def set_estimate(self, session_id: str, tokens: int, exact: bool = False) -> SessionRecord:
        """The prompt changed since the last exact count: record an estimate in its place."""

    def snapshots(self, session_id: str) -> list[SnapshotRecord]:
        """The session's snapshots, newest first."""

    def update_context(self, session_id: str, change: Callable[[ActiveContext, SessionRecord], None],
                       *, expected: list[int] | None = None, messages: Iterable[NewMessage] = (),
                       audit: CompactionRecord | None = None
                       ) -> tuple[SessionRecord, ActiveContext, list[MessageRecord]]:
        """Change the context state (and the session record) in one transaction."""

    def update_session(self, session_id: str, change: Callable[[SessionRecord], None]) -> SessionRecord:
        ...
