"""edit: one of your questions asked again, in other words."""

from ctxkeep.daemon.handlers.branch import made_branch
from ctxkeep.daemon.handlers.regenerate import last_exchange
from ctxkeep.daemon.handlers.registry import Caller, RequestError, handles
from ctxkeep.daemon.handlers.turns import attachments, extras, refuse_unless_idle
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import NewMessage, SessionRecord
from ctxkeep.daemon.turns.limits import refuse_oversized
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import Accepted


def question_at(services: Services, record: SessionRecord, seq: int) -> None:
    """Refuse a seq that is not one of the session's questions."""
    found = services.store.history.messages(record.id, [seq])
    if not found or found[0].role != "user" or found[0].kind != "message":
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"message #{seq} of {record.name!r} is not one of "
                                                       "your questions: `ctxkeep show` numbers them")


@handles(requests.Edit, session=True, waits=True, caller=True)
async def edit(services: Services, req: requests.Edit, record: SessionRecord, *,
               caller: Caller) -> Accepted:
    refuse_unless_idle(services, record, "edit")
    try:
        last = last_exchange(services, record)
    except RequestError:  # the session does not end with an answered question
        if req.seq is None:
            raise
        last = None
    seq = last.question if req.seq is None and last is not None else req.seq
    assert seq is not None
    question_at(services, record, seq)
    extras(req, record)  # a format or tools it cannot take: refused before a branch is made
    refuse_oversized(record, req.text)
    files = await attachments(services, record, req.text, req.cwd, caller)
    if last is not None and last.question == seq:  # in place: the last exchange
        job = services.generations.regenerate(record, last, extras(req, record), NewMessage(
            role="user", content=req.text, files=files, alternative_of=seq))
        return Accepted(id=req.id, session_id=record.id, generation_id=job.id, ahead=0,
                        files=[f.info() for f in files])
    branch, _ = await made_branch(services, record, seq - 1)
    job, ahead, _ = await services.generations.accept(
        branch, NewMessage(role="user", content=req.text, files=files), extras(req, branch))
    return Accepted(id=req.id, session_id=branch.id, generation_id=job.id, ahead=ahead,
                    files=[f.info() for f in files], warnings=[
                        f"#{seq} is not the last question: asked in a new branch, {branch.name!r} "
                        f"({branch.id}); {record.name!r} is unchanged"])
