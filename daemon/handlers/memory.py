"""memory.search and memory.forget: what memory across sessions could bring back, and
taking things out of it."""

from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.retrieval.lexical import query_terms
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.memory import MemoryForget, MemoryHit, MemorySearch
from ctxkeep.protocol.replies import MemoryForgotten, MemoryHits

#: How long a search waits for memory's index to be built the first time (seconds).
FIRST_BUILD_WAIT = 60.0


@handles(MemorySearch)
async def search(services: Services, req: MemorySearch) -> MemoryHits:
    asker = services.store.sessions.get(req.session).id if req.session else ""
    found = await services.memory.search(req.query, asker, req.limit, FIRST_BUILD_WAIT)
    hits = [MemoryHit(session_id=r.session_id, session_name=r.session_name, seq=r.passage.seq,
                      part=r.passage.part, parts=r.passage.parts, role=r.passage.role,  # type: ignore[arg-type]
                      created=r.passage.created, text=r.passage.text, score=round(r.score, 4)) for r in found]
    return MemoryHits(id=req.id, hits=hits, words=sorted(query_terms(req.query)))


@handles(MemoryForget, session=True, waits=True)
async def forget(services: Services, req: MemoryForget, record: SessionRecord) -> MemoryForgotten:
    beyond = [seq for seq in req.seqs if not 0 <= seq < record.next_seq]
    if beyond:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"session {record.name} has no message #{beyond[0]} "
                                                       f"(its messages are #0 to #{record.next_seq - 1})")

    def change(r: SessionRecord) -> None:
        if not req.seqs:
            r.remembered = req.undo
        elif req.undo:
            r.forgotten = [seq for seq in r.forgotten if seq not in req.seqs]
        else:
            r.forgotten = sorted({*r.forgotten, *req.seqs})
    await services.store.off_loop(services.store.sessions.update, record.id, change)
    info = services.announcer.announced(record.id)  # memory hears of it before the next turn
    return MemoryForgotten(id=req.id, session=info)
