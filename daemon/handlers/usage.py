"""usage and prompt: what a session's context window holds, by part and by count."""

from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.prompt import checkpoint_block, wire
from ctxkeep.daemon.handlers.registry import handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import requests
from ctxkeep.protocol.replies import PartKind, PromptPart, PromptReply, UsageReply


@handles(requests.Usage, session=True)
async def usage(services: Services, req: requests.Usage, record: SessionRecord) -> UsageReply:
    context = services.store.context.get(record.id)
    return UsageReply(id=req.id, session_id=record.id, usage=services.announcer.usage(record),
                      checkpoints=[c.info() for c in context.checkpoints], pinned=context.pinned)


@handles(requests.Prompt, session=True)
async def prompt(services: Services, req: requests.Prompt, record: SessionRecord) -> PromptReply:
    """The prompt's parts as the model sees them, each with its estimate."""
    session, context, active = services.store.history.view(record.id)
    estimator, model = services.estimator, session.model
    held: list[tuple[PartKind, str]] = [("system", session.system), ("goals", goal_markers.render(context.goals)),
                                        ("checkpoints", checkpoint_block(context.checkpoints))]
    parts = [PromptPart(kind=kind, text=text, tokens=estimator.text(model, text)) for kind, text in held if text]
    shortened = set(context.file_summaries)
    for m in active:
        short = m.seq in shortened
        for shown in wire(m, short, session.vision):
            parts.append(PromptPart(
                kind="message", text=shown["content"], tokens=estimator.message(model, shown["content"]),
                role=m.role, seq=m.seq, shown="summary" if m.kind == "summary" else "shortened" if short else "whole"))
    return PromptReply(id=req.id, session_id=record.id, parts=parts, window=session.window,
                       tokens=estimator.context(session, context, active))
