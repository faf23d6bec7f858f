"""send and cancel: user turns and stopping them."""

from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.turn_requests import Turn
from ctxkeep.daemon.backends.protocol import ChatExtras
from ctxkeep.daemon.files.expand import FileSettings, find_refs
from ctxkeep.protocol.replies import Accepted, Cancelled
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import Attachment, SessionRecord
from ctxkeep.daemon.handlers.registry import Caller, RequestError, handles


def refuse_unless_idle(services: Services, record: SessionRecord, doing: str) -> None:
    """Refuse to `doing` (regenerate, edit, ...) while the daemon stops or the session works."""
    if services.stopping():
        raise RequestError(ErrorCode.SHUTTING_DOWN, f"ctxkeepd is shutting down: {doing} once it is back")
    if services.jobs.busy(record.id):
        raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is busy: {doing} once its turn or "
                                           "compaction is done, or cancel it")


def extras(req: Turn) -> ChatExtras:
    """What a turn asks of its model call besides the prompt."""
    return ChatExtras(think=req.think, format=req.format, keep_alive=req.keep_alive)


async def attachments(services: Services, record: SessionRecord, text: str, cwd: str,
                      caller: Caller) -> list[Attachment]:
    """A new message's @file references, read now, as they are when the user sends, off the
    event loop (a message that names none does not pay the hop; large ones are read in a
    worker process). An empty message is refused."""
    if not text.strip():
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "the message is empty")
    if not (caller.files and find_refs(text)):
        return []
    return await services.files.expand(text, cwd, FileSettings.of(services.config, caller.remote, record.window),
                                       services.estimator.weights(record.model))


@handles(requests.Send, session=True, waits=True, caller=True)
async def send(services: Services, req: requests.Send, record: SessionRecord, *,
               caller: Caller) -> Accepted:
    if services.stopping():
        raise RequestError(ErrorCode.SHUTTING_DOWN, "ctxkeepd is shutting down: send again "
                                                    "once it is back")
    files = await attachments(services, record, req.text, req.cwd, caller)
    job, ahead, _ = await services.generations.accept(
        record, req.text, extras(req), files)
    return Accepted(id=req.id, session_id=record.id, generation_id=job.id, ahead=ahead,
                    files=[f.info() for f in files],
                    warnings=[f"@{f.path}: {f.error}" for f in files if f.error])


@handles(requests.Cancel, session=True)
async def cancel(services: Services, req: requests.Cancel, record: SessionRecord) -> Cancelled:
    job = services.jobs.cancel(record.id, req.generation_id)
    return Cancelled(id=req.id, session_id=record.id, cancelled=job is not None,
                     generation_id=job.id if job else "")
