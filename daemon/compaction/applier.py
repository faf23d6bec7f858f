"""Committing what a compaction decided: the snapshot before its first change, then the
new context state with its audit record and estimate in one transaction (by the writer
thread); and taking a pass back. Each commit, once it is being made, lands: a cancel
that comes meanwhile is reported, not obeyed."""

from dataclasses import dataclass

from ctxkeep.daemon.compaction.planner import Change
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.store.context_records import ActiveContext, CompactionRecord
from ctxkeep.daemon.store.records import MessageRecord, NewMessage, SessionRecord, View
from ctxkeep.daemon.store.writer import landed
from ctxkeep.protocol.events import SnapshotCreated, SnapshotRestored


@dataclass
class Applier:
    """Commits compactions and says so."""

    parts: Parts

    async def snapshot(self, session_id: str, reason: str) -> str:
        """Save the session's context state before a compaction changes it (keeping the
        newest `snapshots_kept`), and say so; returns its id."""
        store = self.parts.store
        snapshot = await store.off_loop(store.snapshots.save, session_id, reason,
                                        self.parts.config.snapshots_kept)
        self.parts.bus.publish(SnapshotCreated(snapshot=snapshot.info()), session_id)
        return snapshot.id

    async def summary(self, session: SessionRecord, expected: list[int], summary: NewMessage,
                      keep: list[int], record: CompactionRecord, after: int
                      ) -> tuple[SessionRecord, MessageRecord, bool]:
        """Replace the active context by [summary, *keep] (refused when it is no longer
        `expected`): (the session, the stored summary, whether a cancel came meanwhile)."""
        store = self.parts.store
        (session, stored), cancelled = await landed(store.off_loop(
            store.context.compact, session.id, expected=expected, summary=summary, keep=keep,
            record=record, token_estimate=after))
        return session, stored, cancelled

    async def commit_level(self, view: View, change: Change, audit: CompactionRecord,
                           after: int, first: bool = True) -> tuple[View, bool]:
        """An automatic level's change (the cooldown restarts): (the session as it now
        is, whether a cancel came meanwhile). The pass's `first` change counts as the
        session's compaction (a pass is one compaction, however many levels it ran)."""
        def update(c: ActiveContext, record: SessionRecord) -> None:
            c.seqs, c.file_summaries, c.checkpoints = change.seqs, change.file_summaries, change.checkpoints
            c.last_auto_at = record.message_count
            record.compactions += first
            record.count = record.count.estimated(after)
        store = self.parts.store
        (session, context, _), cancelled = await landed(store.off_loop(
            store.context.update, view.session.id, update, expected=view.context.seqs, audit=audit))
        by_seq = {m.seq: m for m in view.active}
        return View(session, context, [by_seq[s] for s in context.seqs if s in by_seq]), cancelled

    async def roll_back(self, session_id: str, snapshot_id: str) -> None:
        """Take back everything since the snapshot a pass took (later turns stay)."""
        store = self.parts.store
        _, snapshot = await store.off_loop(store.snapshots.restore, session_id, snapshot_id, undo=True)
        self.parts.bus.publish(SnapshotRestored(snapshot=snapshot.info()), session_id)
        await self.parts.announcer.prompt_changed(session_id)
        self.parts.announcer.changed(session_id)
