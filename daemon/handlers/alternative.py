"""alternative: another answer to the last question made the one the model sees."""

from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import SessionReply
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.handlers.regenerate import last_exchange
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord


@handles(requests.Alternative, session=True, waits=True)
async def alternative(services: Services, req: requests.Alternative, record: SessionRecord) -> SessionReply:
    if services.jobs.busy(record.id):
        raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is busy: choose an answer once its "
                                           "turn or compaction is done")
    last = last_exchange(services, record)
    if not last.active:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "the last question's answer is not in what the model "
                                                       "sees (its turn failed): /retry it")
    page = services.store.history.page(record.id, req.seq, 1)[0] if req.seq < record.next_seq else []
    chosen = page[0] if page and page[0].seq == req.seq else None
    if chosen is None or chosen.role != "assistant" or chosen.reply_to != last.question:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"#{req.seq} is not an answer to the last question "
                                                       f"(#{last.question}): `ctxkeep show` marks them")
    if chosen.status != "complete":
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"#{req.seq} was cut short ({chosen.error}): "
                                                       "/retry for a whole new answer")
    store = services.store
    await store.off_loop(store.context.switch_answer, record.id, last.question, last.answer, req.seq)
    await services.announcer.prompt_changed(record.id)
    return SessionReply(id=req.id, session=services.announcer.changed(record.id, usage=True))
