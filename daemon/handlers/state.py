"""pin, goals.get/set, snapshot.create/list/restore/delete: the session's context state."""

import time

import msgspec

from ctxkeep.daemon.context.prompt_change import change_prompt
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import GoalUpdated, SnapshotCreated, SnapshotRestored
from ctxkeep.protocol.goals import Goals
from ctxkeep.protocol.replies import GoalsReply, SessionReply, SnapshotReply, SnapshotsReply


def _idle(services: Services, session_id: str, what: str) -> None:
    if services.jobs.busy(session_id):
        raise RequestError(ErrorCode.BUSY, f"the session is generating or compacting: {what} "
                                           "once it is done (or cancel it)")


@handles(requests.Pin, session=True, waits=True)
async def pin(services: Services, req: requests.Pin, record: SessionRecord) -> SessionReply:
    if not services.store.history.messages(record.id, [req.seq]):
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"the session has no message #{req.seq}")

    def change(context: ActiveContext) -> None:
        pinned = [s for s in context.pinned if s != req.seq]
        context.pinned = sorted(pinned + [req.seq]) if req.pinned else pinned
    view = await change_prompt(services.store, services.estimator, record.id, change)
    return SessionReply(id=req.id, session=services.announcer.announced(record.id, view=view))


@handles(requests.GoalsGet, session=True)
async def goals_get(services: Services, req: requests.GoalsGet, record: SessionRecord) -> GoalsReply:
    return GoalsReply(id=req.id, session_id=record.id, goals=services.store.context.get(record.id).goals)


@handles(requests.GoalsSet, session=True, waits=True)
async def goals_set(services: Services, req: requests.GoalsSet, record: SessionRecord) -> GoalsReply:
    goals = msgspec.convert(msgspec.to_builtins(req.goals), Goals)
    goals.updated = time.time()

    def change(context: ActiveContext) -> None:
        context.goals = goals
    view = await change_prompt(services.store, services.estimator, record.id, change)
    services.bus.publish(GoalUpdated(goals=goals), record.id)
    services.announcer.changed(record.id, view=view)
    return GoalsReply(id=req.id, session_id=record.id, goals=goals)


@handles(requests.SnapshotCreate, session=True, waits=True)
async def snapshot_create(services: Services, req: requests.SnapshotCreate, record: SessionRecord) -> SnapshotReply:
    snapshot = (await services.store.off_loop(services.store.snapshots.save, record.id, req.reason,
                                              services.config.snapshots_kept)).info()
    services.bus.publish(SnapshotCreated(snapshot=snapshot), record.id)
    return SnapshotReply(id=req.id, session_id=record.id, snapshot=snapshot)


@handles(requests.SnapshotList, session=True)
async def snapshot_list(services: Services, req: requests.SnapshotList, record: SessionRecord) -> SnapshotsReply:
    return SnapshotsReply(id=req.id, session_id=record.id,
                          snapshots=[s.info() for s in services.store.snapshots.all(record.id)])


@handles(requests.SnapshotRestore, session=True, waits=True)
async def snapshot_restore(services: Services, req: requests.SnapshotRestore, record: SessionRecord) -> SnapshotReply:
    """A snapshot by id, or without one `undo`: the newest compaction not yet undone
    (each undo walks one compaction further back; later turns stay)."""
    _idle(services, record.id, "restore")
    snapshot_id = req.snapshot_id
    if not snapshot_id:
        before = [s for s in services.store.snapshots.all(record.id)
                  if s.reason.startswith("before compaction") and not s.undone]
        if not before:
            raise RequestError(ErrorCode.INVALID_ARGUMENT, "no compaction to undo in this session")
        snapshot_id = before[0].id
    record, snapshot = await services.store.off_loop(services.store.snapshots.restore, record.id,
                                                     snapshot_id, undo=not req.snapshot_id)
    info = snapshot.info()
    services.bus.publish(SnapshotRestored(snapshot=info), record.id)
    # the snapshot's exact count stands when nothing joined since and the estimate agrees
    await services.announcer.prompt_changed(record.id, record.count.next_prompt if record.count.exact else None)
    services.announcer.changed(record.id)
    return SnapshotReply(id=req.id, session_id=record.id, snapshot=info)


@handles(requests.SnapshotDelete, session=True, waits=True)
async def snapshot_delete(services: Services, req: requests.SnapshotDelete, record: SessionRecord) -> SnapshotReply:
    snapshot = await services.store.off_loop(services.store.snapshots.delete, record.id,
                                             req.snapshot_id)  # NoSuchSnapshot: its code
    return SnapshotReply(id=req.id, session_id=record.id, snapshot=snapshot.info())
