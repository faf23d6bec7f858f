"""session.branch: a new session holding another's history up to a message, with the
context as it stood then."""


from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.handlers.sessions import announce_new, check_name
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import SessionReply
from ctxkeep.protocol.structs import SessionInfo


def branch_point(record: SessionRecord, at: int | None) -> int:
    """The seq of the branch's last message: checked against what the session holds."""
    last = record.next_seq - 1 if at is None else at
    if record.next_seq == 0:
        raise RequestError(ErrorCode.INVALID_ARGUMENT,
                           f"session {record.name!r} has no messages yet: there is nothing to branch")
    if last >= record.next_seq:
        raise RequestError(ErrorCode.INVALID_ARGUMENT,
                           f"session {record.name!r} has no message #{last}: its messages are "
                           f"#0 to #{record.next_seq - 1} (`ctxkeep show` numbers them)")
    waiting = [seq for seq in record.pending if seq <= last]
    if waiting:
        raise RequestError(ErrorCode.BUSY, f"message #{waiting[0]} of {record.name!r} is a question "
                                           "still being answered: branch once its answer is stored, "
                                           f"or at #{waiting[0] - 1} or before")
    return last


async def made_branch(services: Services, record: SessionRecord, last: int, name: str = ""
                      ) -> tuple[SessionRecord, SessionInfo]:
    """A branch of `record` up to seq `last` (-1: none of its history), stored, estimated,
    announced and indexed for recall (in the background): (its record, as clients see it)."""
    store = services.store
    made = await store.off_loop(store.branches.branch, record.id, last, name)
    made = await services.announcer.prompt_changed(made.id)  # the count: an estimate until a turn
    # indexed for recall (a worker thread for a long one; embeddings in the background)
    services.recaller.prepare(made.id)
    return made, announce_new(services, made)


@handles(requests.Branch, session=True, waits=True)
async def branch(services: Services, req: requests.Branch, record: SessionRecord) -> SessionReply:
    last = branch_point(record, req.at)
    check_name(req.name)
    _, info = await made_branch(services, record, last, req.name)
    return SessionReply(id=req.id, session=info)
