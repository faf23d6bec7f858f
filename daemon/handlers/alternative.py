"""alternative: another answer to the last question made the one the model sees."""

from ctxkeep.daemon.handlers.regenerate import last_exchange
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.handlers.turns import refuse_unless_idle
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import SessionReply


@handles(requests.Alternative, session=True, waits=True)
async def alternative(services: Services, req: requests.Alternative, record: SessionRecord) -> SessionReply:
    refuse_unless_idle(services, record, "choose an answer")
    last = last_exchange(services, record)
    if not last.in_context:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "the last question's answer is not in what the model "
                                                       "sees (its turn failed): /retry it")
    chosen = next(iter(services.store.history.messages(record.id, [req.seq])), None)
    if chosen is None or chosen.role != "assistant" or chosen.reply_to != last.question:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"#{req.seq} is not an answer to the last question "
                                                       f"(#{last.question}): `ctxkeep show` marks them")
    if chosen.status != "complete":
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"#{req.seq} was cut short ({chosen.error}): "
                                                       "/retry for a whole new answer")
    store = services.store
    await store.off_loop(store.context.switch_answer, record.id, last.question, last.answer, req.seq)
    await services.announcer.prompt_changed(record.id)
    return SessionReply(id=req.id, session=services.announcer.announced(record.id, usage=True))
