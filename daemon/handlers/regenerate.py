"""regenerate: a new answer to the session's last question."""

from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.handlers.turns import extras, refuse_unless_idle
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.turns.question import Reopened
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import Accepted

#: How far back from the end of the history the last answer is looked for (compaction
#: summaries may follow it).
LOOK_BACK = 8


def last_exchange(services: Services, record: SessionRecord) -> Reopened:
    """The session's last question and its answer (complete, or a failed turn's)."""
    start = max(0, record.next_seq - LOOK_BACK)
    page, _, _ = services.store.history.page(record.id, start, LOOK_BACK)
    answers = [m for m in page if m.kind == "message" and m.role == "assistant" and m.reply_to >= 0]
    later = [m for m in page if m.kind == "message" and m.role == "user" and
             (not answers or m.seq > answers[-1].seq)]
    if not answers or later:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"session {record.name!r} has no answered question "
                                                       "at its end: there is nothing to regenerate")
    question = answers[-1].reply_to
    context = services.store.context.get(record.id).seqs
    if len(context) >= 2 and context[-2] == question:  # its answer the model sees: the newest
        return Reopened(question, context[-1], (question, context[-1]))  # or one put back
    if answers[-1].status == "complete" or question in context:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "the last answer is no longer in what the model "
                                                       "sees (compacted, or a snapshot restored): send a "
                                                       "message instead")
    # a failed turn, retried; a failed edit's in place of the exchange it was to replace
    asked = next(iter(services.store.history.messages(record.id, [question])), None)
    edited = asked is not None and asked.alternative_of >= 0 and context[-2:-1] == [asked.alternative_of]
    return Reopened(question, answers[-1].seq, tuple(context[-2:]) if edited else ())


@handles(requests.Regenerate, session=True)
async def regenerate(services: Services, req: requests.Regenerate, record: SessionRecord) -> Accepted:
    refuse_unless_idle(services, record, "regenerate" if not req.continues else "continue")
    exchange = last_exchange(services, record)
    prefill = continued(services, record, exchange) if req.continues else ""
    job = services.generations.regenerate(record, exchange, extras(req, record), prefill=prefill)
    return Accepted(id=req.id, session_id=record.id, generation_id=job.id, ahead=0)


def continued(services: Services, record: SessionRecord, exchange: Reopened) -> str:
    """The text a continue goes on from: the last answer, whole and in the active context."""
    (answer,) = services.store.history.messages(record.id, [exchange.answer])
    if not exchange.in_context or answer.status != "complete" or answer.tool_calls or not answer.content:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"session {record.name!r} has no whole answer at its end "
                                                       "to go on from (a failed turn is regenerated instead)")
    return answer.content
