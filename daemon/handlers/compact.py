"""compact: a manual compaction of a session, or its plan (`dry_run`)."""

from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import CompactionAccepted, CompactionPlan


@handles(requests.Compact, session=True, waits=True)
async def compact(services: Services, req: requests.Compact,
                  record: SessionRecord) -> CompactionAccepted | CompactionPlan:
    if req.dry_run:  # the compaction model's window comes from Ollama: may raise its errors
        return (await services.compactor.plan(record, req.tail_turns)).reply(req.id)
    if services.stopping():
        raise RequestError(ErrorCode.SHUTTING_DOWN, "ctxkeepd is shutting down")
    job, ahead = services.compactor.submit(record, req.tail_turns, req.instructions, req.requested_by)
    return CompactionAccepted(id=req.id, session_id=record.id, compaction_id=job.id, ahead=ahead)
