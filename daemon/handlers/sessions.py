"""session.create / list / get / rename / delete / set_system / set_model."""

import asyncio
from collections.abc import Callable

from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.daemon.backends.options import check_options
from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.context.listing import shown
from ctxkeep.daemon.handlers.models import check_installed
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import ContextUsage, SessionCreated, SessionDeleted
from ctxkeep.protocol.replies import Deleted, SessionReply, SessionsReply
from ctxkeep.protocol.structs import SessionInfo


async def _updated(services: Services, req, record: SessionRecord, prompt_changed: bool,
                   usage_changed: bool = False) -> SessionReply:
    """Announce the change (with a fresh estimate when what the model sees changed, and the
    usage when that or the budget changed) and answer."""
    if prompt_changed:
        await services.announcer.prompt_changed(record.id)
    info = services.announcer.announced(record.id, usage=prompt_changed or usage_changed)
    return SessionReply(id=req.id, session=info)


async def _stored(services: Services, req, record: SessionRecord, change: Callable[[SessionRecord], None],
                  prompt_changed: bool) -> SessionReply:
    """Store `change` to the session, announce it (`_updated`) and answer."""
    updated = await services.store.off_loop(services.store.sessions.update, record.id, change)
    return await _updated(services, req, updated, prompt_changed)


#: Names and model names are keys in the store, which takes at most 511 bytes a key.
MAX_NAME_BYTES = 255


def check_name(name: str) -> None:
    """A session name the store can key."""
    _check_bytes("name", name)


def _check_bytes(what: str, value: str) -> None:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"the {what} is {size} bytes of UTF-8; at "
                                                       f"most {MAX_NAME_BYTES} are allowed: choose a shorter one")


@handles(requests.SessionCreate, waits=True)
async def create(services: Services, req: requests.SessionCreate) -> SessionReply:
    record = await new_session(services, req)
    info = announce_new(services, record)
    services.recaller.prepare(record.id)  # its recall index made now (after this reply), not by its first turn
    return SessionReply(id=req.id, session=info)


def announce_new(services: Services, record: SessionRecord) -> SessionInfo:
    """`session.created` and its first `context.usage`; the session as clients see it."""
    info = services.announcer.info(record)
    services.bus.publish(SessionCreated(session=info), record.id)
    services.bus.publish(ContextUsage(usage=services.announcer.usage(record)), record.id)
    return info


async def new_session(services: Services, req: requests.SessionCreate,
                      branched_from: str = "", branched_at: int = -1) -> SessionRecord:
    """A session as `req` asks, its name and model checked (and, unless forced, the model
    and options against Ollama's), stored by the writer thread; not yet announced.
    `branched_from`: the id of the session it is a branch of."""
    cfg = services.config
    model = req.model or cfg.default_model
    _check_bytes("name", req.name)
    _check_bytes("model name", model)
    known = services.backend.known_facts(model)
    if not req.force:
        await check_installed(services, model)
        if req.options:  # off the loop: the check may be the first to import the ollama package
            await asyncio.to_thread(check_options, req.options)
        known = await model_facts(services, model)  # the window is capped from the start
    empty = [{"role": "system", "content": req.system}] if req.system else []
    return await services.store.off_loop(
        services.store.sessions.create,
        name=req.name, model=model, system=req.system,
        options=req.options or dict(cfg.default_options), num_ctx=req.num_ctx or cfg.num_ctx,
        # what a first turn would otherwise record with a second commit, when known already
        context_length=known.context_length if known else 0,
        parameter_size=known.parameter_size if known else "",
        token_estimate=services.estimator.prompt(model, empty),  # the empty prompt, estimated
        branched_from=branched_from, branched_at=branched_at, tools=req.tools)


async def model_facts(services: Services, model: str) -> ModelFacts | None:
    """What Ollama says of `model` (/api/show, asked once per daemon run), or None when it
    cannot say: the first turn asks again and says what is wrong."""
    try:
        return await services.backend.facts(model)
    except ModelCallError:
        return None


@handles(requests.SessionList)
async def list_sessions(services: Services, req: requests.SessionList) -> SessionsReply:
    # The list, already encoded (msgspec.Raw is written into the reply as it is).
    return SessionsReply(id=req.id, sessions=services.listing.encoded())  # type: ignore[arg-type]


@handles(requests.SessionGet, session=True)
async def get(services: Services, req: requests.SessionGet, record: SessionRecord) -> SessionReply:
    return SessionReply(id=req.id, session=shown(record, busy=services.jobs.busy(record.id)))


@handles(requests.SessionRename, session=True, waits=True)
async def rename(services: Services, req: requests.SessionRename, record: SessionRecord) -> SessionReply:
    _check_bytes("name", req.name)

    def change(r: SessionRecord) -> None:
        r.name = req.name
    return await _stored(services, req, record, change, False)


@handles(requests.SessionDelete, session=True, waits=True)
async def delete(services: Services, req: requests.SessionDelete, record: SessionRecord) -> Deleted:
    if services.jobs.busy(record.id):
        raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is generating: "
                                           "cancel it first (`ctxkeep cancel`), then delete")
    await services.store.off_loop(services.store.sessions.delete, record.id)
    services.recaller.forget(record.id)
    services.bus.publish(SessionDeleted(), record.id)
    return Deleted(id=req.id, session_id=record.id)


@handles(requests.SetSystem, session=True, waits=True)
async def set_system(services: Services, req: requests.SetSystem, record: SessionRecord) -> SessionReply:

    def change(r: SessionRecord) -> None:
        r.system = req.system
    return await _stored(services, req, record, change, True)


@handles(requests.SetTools, session=True, waits=True)
async def set_tools(services: Services, req: requests.SetTools, record: SessionRecord) -> SessionReply:

    def change(r: SessionRecord) -> None:
        r.tools = list(req.tools)
    return await _stored(services, req, record, change, True)


@handles(requests.SetModel, session=True, waits=True)
async def set_model(services: Services, req: requests.SetModel, record: SessionRecord) -> SessionReply:
    _check_bytes("model name", req.model or "")
    _check_bytes("compaction model name", req.compaction_model or "")
    if req.thresholds is not None and req.thresholds and (
            len(req.thresholds) != 3 or sorted(req.thresholds) != list(req.thresholds)):
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "thresholds are three rising fractions of "
                                                       "the budget, e.g. [0.5, 0.65, 0.8] ([] = default)")
    known = services.backend.known_facts(req.model) if req.model else None
    if req.model and req.model != record.model and not req.force:
        await check_installed(services, req.model)
        known = await model_facts(services, req.model)  # the new window, known at once
    if req.options and not req.force:
        await asyncio.to_thread(check_options, req.options)

    def change(r: SessionRecord) -> None:
        if req.model and req.model != r.model:
            r.model = req.model
            # known (asked above, or before), else asked from /api/show at the next turn
            r.context_length = known.context_length if known else 0
            r.parameter_size = known.parameter_size if known else ""
        if req.options is not None:
            r.options = dict(req.options)
        if req.num_ctx is not None:
            r.num_ctx = req.num_ctx
        if req.compaction_model is not None:
            r.compaction_model = req.compaction_model
        if req.auto_compaction is not None:
            r.auto_compaction = req.auto_compaction
        if req.thresholds is not None:
            r.thresholds = list(req.thresholds)
        if req.recall is not None:
            r.recall = req.recall
        if req.recall_budget is not None:
            r.recall_budget = req.recall_budget or None
        if req.memory is not None:
            r.memory = req.memory
    updated = await services.store.off_loop(services.store.sessions.update, record.id, change)
    # Only a new model changes what is counted (its tokenizer and template); a window,
    # options or thresholds change the budget, not the prompt, whose count stays exact.
    return await _updated(services, req, updated, prompt_changed=updated.model != record.model,
                          usage_changed=True)
