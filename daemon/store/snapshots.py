"""Snapshots of the active context, and restoring them (undo)."""

import time

import msgspec

from ctxkeep.daemon.store import codecs, keys
from ctxkeep.daemon.store.context_records import ActiveContext, SnapshotRecord
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.errors import NoSuchSnapshot
from ctxkeep.daemon.store.history import History
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.txn import Txn


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


class Snapshots:
    """Snapshots of the active context, and restoring them (undo)."""

    def __init__(self, env: Environment, history: History) -> None:
        self.env = env
        self.dbs = env.dbs
        self.history = history

    def save(self, session_id: str, reason: str, keep: int = 50) -> SnapshotRecord:
        """Save the session's context state; returns the snapshot. Only the newest `keep`
        of the session's snapshots stay (the oldest are deleted in the same commit)."""
        def save(txn: Txn) -> SnapshotRecord:
            session = self.env.session_in(txn, session_id)
            stamp = time.time_ns()
            snapshot = SnapshotRecord(
                id=f"{stamp:x}", created=stamp / 1e9, reason=reason,
                context=self.env.context_in(txn, session_id), count=session.count,
                compactions=session.compactions, next_seq=session.next_seq)
            txn.put(keys.numbered(session_id, stamp), codecs.encode(snapshot), db=self.dbs["snapshots"])
            self._prune(txn, session_id, keep)
            return snapshot
        return self.env.write(save)

    def _prune(self, txn: Txn, session_id: str, keep: int) -> None:
        """Delete the session's oldest snapshots beyond the newest `keep`."""
        within = keys.prefix(session_id)
        cursor = txn.cursor(db=self.dbs["snapshots"])
        found = []
        if cursor.set_range(within):
            for key in cursor.iternext(values=False):
                if not key.startswith(within):
                    break
                found.append(key)
        for key in found[:max(0, len(found) - keep)]:  # keys sort oldest first
            txn.delete(key, db=self.dbs["snapshots"])

    def all(self, session_id: str) -> list[SnapshotRecord]:
        """The session's snapshots, newest first."""
        return self.env.scan("snapshots", session_id, codecs.snapshot)[::-1]

    def restore(self, session_id: str, snapshot_id: str, *, undo: bool = False
                ) -> tuple[SessionRecord, SnapshotRecord]:
        """Put a snapshot's active messages, checkpoints and file summaries back; the
        history is never touched, and the goal record and pins stay as they are now (they
        are the user's edits, which no compaction makes).

        - By id (`undo` False): the snapshot's context exactly. Turns that joined the
          active context after it leave it (they stay in history).
        - `undo`: take back the compaction the snapshot was taken before. Turns that joined
          the active context after it stay, after the restored messages; what the
          compaction wrote (a summary message; checkpoints and file outlines, which live in
          the context state) leaves. The snapshot is marked undone, so the next undo walks
          one compaction further back.

        The session's count becomes an estimate: call `set_estimate` after."""
        def restore(txn: Txn) -> tuple[SessionRecord, SnapshotRecord]:
            session = self.env.session_in(txn, session_id)
            key, snapshot = self._find(txn, session_id, snapshot_id)
            current = self.env.context_in(txn, session_id)
            later = self._joined_since(txn, session_id, snapshot, current) if undo else []
            joined = set(later)
            restored = msgspec.structs.replace(
                snapshot.context, seqs=[*snapshot.context.seqs, *later], goals=current.goals,
                pinned=current.pinned,
                file_summaries=[*snapshot.context.file_summaries,
                                *(s for s in current.file_summaries if s in joined)])
            self.env.put_context(txn, session_id, restored)
            if undo:
                snapshot.undone = True
                txn.put(key, codecs.encode(snapshot), db=self.dbs["snapshots"])
            session.count = session.count.restored(snapshot.count, later=bool(later))
            session.compactions = snapshot.compactions
            session.updated = time.time()
            self.env.put_session(txn, session)
            return session, snapshot
        return self.env.write(restore)

    def _find(self, txn: Txn, session_id: str, snapshot_id: str) -> tuple[bytes, SnapshotRecord]:
        key = keys.numbered(session_id, _snapshot_stamp(snapshot_id))
        raw = txn.get(key, db=self.dbs["snapshots"])
        if raw is None:
            raise NoSuchSnapshot(f"no snapshot {snapshot_id!r} in this session: "
                                 "`ctxkeep snapshot SESSION list` lists them")
        return key, codecs.snapshot(raw)

    def _joined_since(self, txn: Txn, session_id: str, snapshot: SnapshotRecord,
                      current: ActiveContext) -> list[int]:
        """The conversation's own messages that joined the active context after `snapshot`
        (a question stored before it and answered after included), in context order;
        summaries written since are the compactions' own, and are left out."""
        taken = set(snapshot.context.seqs)
        since = [s for s in current.seqs if s not in taken]
        return [m.seq for m in self.history.messages_in(txn, session_id, since) if m.kind == "message"]

    def delete(self, session_id: str, snapshot_id: str) -> SnapshotRecord:
        def delete(txn: Txn) -> SnapshotRecord:
            key, snapshot = self._find(txn, session_id, snapshot_id)
            txn.delete(key, db=self.dbs["snapshots"])
            return snapshot
        return self.env.write(delete)
