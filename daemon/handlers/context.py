"""usage and compact: the context window of a session."""

from ...protocol import ErrorCode, requests
from ...protocol.replies import CompactionAccepted, CompactionPlan, UsageReply
from ..ollama_backend import ModelCallError
from ..usage import usage_of
from .registry import RequestError, handles


@handles(requests.Usage)
async def usage(daemon, req: requests.Usage) -> UsageReply:
    record = daemon.store.session(req.session)
    context = daemon.store.context(record.id)
    active = daemon.store.messages(record.id, context.seqs)
    return UsageReply(id=req.id, session_id=record.id,
                      usage=usage_of(record, context, active, daemon.estimator, daemon.config),
                      checkpoints=[c.info() for c in context.checkpoints], pinned=context.pinned)


@handles(requests.Compact)
async def compact(daemon, req: requests.Compact) -> CompactionAccepted | CompactionPlan:
    record = daemon.store.session(req.session)
    if req.dry_run:
        try:
            plan = await daemon.compactor.plan(record, req.tail_turns)
        except ModelCallError as exc:  # the compaction model's window comes from Ollama
            raise RequestError(exc.code, exc.message) from None
        return plan.reply(req.id)
    if daemon.stopping:
        raise RequestError(ErrorCode.SHUTTING_DOWN, "ctxkeepd is shutting down")
    try:
        job, ahead = daemon.compactor.submit(record, req.tail_turns, req.instructions,
                                             req.requested_by)
    except ValueError as exc:
        raise RequestError(ErrorCode.BUSY, str(exc)) from None
    return CompactionAccepted(id=req.id, session_id=record.id, compaction_id=job.id, ahead=ahead)
