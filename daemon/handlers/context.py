"""usage and compact: the context window of a session."""

from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import CompactionAccepted, CompactionPlan, UsageReply
from ctxkeep.daemon.handlers.registry import RequestError, handles


@handles(requests.Usage)
async def usage(daemon, req: requests.Usage) -> UsageReply:
    record = daemon.store.session(req.session)
    context = daemon.store.context(record.id)
    return UsageReply(id=req.id, session_id=record.id, usage=daemon.announcer.usage(record),
                      checkpoints=[c.info() for c in context.checkpoints], pinned=context.pinned)


@handles(requests.Compact)
async def compact(daemon, req: requests.Compact) -> CompactionAccepted | CompactionPlan:
    record = daemon.store.session(req.session)
    if req.dry_run:  # the compaction model's window comes from Ollama: may raise its errors
        return (await daemon.compactor.plan(record, req.tail_turns)).reply(req.id)
    if daemon.stopping:
        raise RequestError(ErrorCode.SHUTTING_DOWN, "ctxkeepd is shutting down")
    job, ahead = daemon.compactor.submit(record, req.tail_turns, req.instructions, req.requested_by)
    return CompactionAccepted(id=req.id, session_id=record.id, compaction_id=job.id, ahead=ahead)
