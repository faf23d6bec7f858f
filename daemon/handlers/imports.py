"""session.import: a conversation brought in from an export or another tool."""

from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import ContextUsage, SessionCreated
from ctxkeep.protocol.replies import SessionReply
from ctxkeep.daemon.handlers.models import check_installed
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import NewMessage


@handles(requests.SessionImport, waits=True)
async def import_session(services: Services, req: requests.SessionImport) -> SessionReply:
    """A new session with the messages, all of them active (the next turn's check compacts
    what does not fit), or, with `session`, the messages appended to that session."""
    store, cfg = services.store, services.config
    messages = [NewMessage(role=m.role, content=m.content, thinking=m.thinking, kind=m.kind,
                           status=m.status, error=m.error) for m in req.messages]
    if req.session:
        record = store.session(req.session)
        if services.jobs.busy(record.id):
            raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is busy: import into it "
                                               "once its turn or compaction is done")
        created = False
    else:
        model = req.model or cfg.default_model
        if not req.force:
            await check_installed(services, model)
        known = services.backend.known_facts(model)
        record = await store.off_loop(
            store.create_session, name=req.name, model=model, system=req.system,
            options=req.options or dict(cfg.default_options), num_ctx=req.num_ctx or cfg.num_ctx,
            context_length=known.context_length if known else 0,
            parameter_size=known.parameter_size if known else "")
        created = True
    if messages:
        await store.off_loop(store.append, record.id, messages, activate=range(len(messages)))
        await services.announcer.prompt_changed(record.id)  # the count is now an estimate
    if not created:
        info = services.announcer.changed(record.id)
        if info is None:
            raise RequestError(ErrorCode.UNKNOWN_SESSION, "the session was deleted meanwhile")
        return SessionReply(id=req.id, session=info)
    record = store.session(record.id)
    info = services.announcer.info(record)
    services.bus.publish(SessionCreated(session=info), record.id)
    services.bus.publish(ContextUsage(usage=services.announcer.usage(record)), record.id)
    return SessionReply(id=req.id, session=info)
