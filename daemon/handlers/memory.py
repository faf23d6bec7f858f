"""memory.search and memory.forget: what memory across sessions could bring back, and
taking things out of it."""

from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.memory.memory import Memory
from ctxkeep.daemon.memory.query import Query
from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.lexical import query_terms
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.memory import MemoryForget, MemoryHit, MemorySearch
from ctxkeep.protocol.replies import MemoryForgotten, MemoryHits

#: How long a search waits for memory's index to be built the first time (seconds).
FIRST_BUILD_WAIT = 60.0


def _memory(services: Services) -> Memory:
    memory = services.recaller.memory
    if memory is None:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "memory is not part of this daemon")
    return memory


@handles(MemorySearch)
async def search(services: Services, req: MemorySearch) -> MemoryHits:
    memory = _memory(services)
    asker = services.store.sessions.get(req.session).id if req.session else ""
    terms = query_terms(req.query)
    vector = await services.recaller.embedder.vector(req.query, services.config.recall_embed_wait_ms / 1000)
    await memory.built(FIRST_BUILD_WAIT)
    ranked = await memory.rank(asker, Query(terms, vector, select.addressed(req.query), own=frozenset(terms)),
                               req.limit)
    index = memory.index
    hits = []
    for pid, score in ranked[:req.limit]:
        owner = index.source(pid) if index is not None else None
        if owner is None or index is None:
            continue
        p = index.passages[pid]
        hits.append(MemoryHit(session_id=owner.session_id, session_name=owner.name, seq=p.seq, part=p.part,
                              parts=p.parts, role=p.role, created=p.created, text=p.text,  # type: ignore[arg-type]
                              score=round(score, 4)))
    return MemoryHits(id=req.id, hits=hits, words=sorted(terms))


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
    info = services.announcer.changed(record.id)  # memory hears of it before the next turn
    return MemoryForgotten(id=req.id, session=info)
