"""pin, goals.get/set, snapshot.create/list/restore/delete: the session's context state."""

from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import GoalUpdated, SnapshotCreated, SnapshotRestored
from ctxkeep.protocol.replies import GoalsReply, SessionReply, SnapshotReply, SnapshotsReply
from ctxkeep.daemon.store.store import NoSuchSnapshot
from ctxkeep.daemon.handlers.registry import RequestError, handles


def _idle(daemon, session_id: str, what: str) -> None:
    if daemon.jobs.busy(session_id):
        raise RequestError(ErrorCode.BUSY, f"the session is generating or compacting: {what} "
                                           "once it is done (or cancel it)")


@handles(requests.Pin)
async def pin(daemon, req: requests.Pin) -> SessionReply:
    record = daemon.store.session(req.session)
    if not daemon.store.messages(record.id, [req.seq]):
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"the session has no message #{req.seq}")

    def change(context, _session) -> None:
        pinned = [s for s in context.pinned if s != req.seq]
        context.pinned = sorted(pinned + [req.seq]) if req.pinned else pinned
    daemon.store.update_context(record.id, change)
    daemon.announcer.prompt_changed(record.id)  # a pinned message moves to the pinned segment
    return SessionReply(id=req.id, session=daemon.announcer.changed(record.id))


@handles(requests.GoalsGet)
async def goals_get(daemon, req: requests.GoalsGet) -> GoalsReply:
    record = daemon.store.session(req.session)
    return GoalsReply(id=req.id, session_id=record.id, goals=daemon.store.context(record.id).goals)


@handles(requests.GoalsSet)
async def goals_set(daemon, req: requests.GoalsSet) -> GoalsReply:
    record = daemon.store.session(req.session)

    def change(context, _session) -> None:
        context.goals = req.goals
    daemon.store.update_context(record.id, change)
    daemon.bus.publish(GoalUpdated(goals=req.goals), record.id)
    daemon.announcer.prompt_changed(record.id)
    daemon.announcer.changed(record.id)
    return GoalsReply(id=req.id, session_id=record.id, goals=req.goals)


@handles(requests.SnapshotCreate)
async def snapshot_create(daemon, req: requests.SnapshotCreate) -> SnapshotReply:
    record = daemon.store.session(req.session)
    snapshot = daemon.store.save_snapshot(record.id, req.reason).info()
    daemon.bus.publish(SnapshotCreated(snapshot=snapshot), record.id)
    return SnapshotReply(id=req.id, session_id=record.id, snapshot=snapshot)


@handles(requests.SnapshotList)
async def snapshot_list(daemon, req: requests.SnapshotList) -> SnapshotsReply:
    record = daemon.store.session(req.session)
    return SnapshotsReply(id=req.id, session_id=record.id,
                          snapshots=[s.info() for s in daemon.store.snapshots(record.id)])


@handles(requests.SnapshotRestore)
async def snapshot_restore(daemon, req: requests.SnapshotRestore) -> SnapshotReply:
    """A snapshot by id, or without one `undo`: the newest compaction not yet undone
    (each undo walks one compaction further back; later turns stay)."""
    record = daemon.store.session(req.session)
    _idle(daemon, record.id, "restore")
    snapshot_id = req.snapshot_id
    if not snapshot_id:
        before = [s for s in daemon.store.snapshots(record.id)
                  if s.reason.startswith("before compaction") and not s.undone]
        if not before:
            raise RequestError(ErrorCode.INVALID_ARGUMENT, "no compaction to undo in this session")
        snapshot_id = before[0].id
    try:
        record, snapshot = daemon.store.restore_snapshot(record.id, snapshot_id,
                                                         undo=not req.snapshot_id)
    except NoSuchSnapshot as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, str(exc)) from None
    info = snapshot.info()
    daemon.bus.publish(SnapshotRestored(snapshot=info), record.id)
    daemon.announcer.prompt_changed(record.id)
    daemon.announcer.changed(record.id)
    return SnapshotReply(id=req.id, session_id=record.id, snapshot=info)


@handles(requests.SnapshotDelete)
async def snapshot_delete(daemon, req: requests.SnapshotDelete) -> SnapshotReply:
    record = daemon.store.session(req.session)
    try:
        snapshot = daemon.store.delete_snapshot(record.id, req.snapshot_id)
    except NoSuchSnapshot as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, str(exc)) from None
    return SnapshotReply(id=req.id, session_id=record.id, snapshot=snapshot.info())
