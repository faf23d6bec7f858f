"""search: words across every session's history, through the index kept as messages are stored."""

from ctxkeep.daemon.handlers.registry import handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.shown import message_info
from ctxkeep.daemon.store.word_index import words
from ctxkeep.protocol import requests
from ctxkeep.protocol.replies import SearchReply
from ctxkeep.protocol.structs import SearchHit


@handles(requests.Search)
async def search(services: Services, req: requests.Search) -> SearchReply:
    store = services.store
    session_id = store.sessions.get(req.session).id if req.session else ""
    hits, total = store.search.find(req.query, session_id, req.limit)
    names: dict[str, str] = {}
    out = []
    for sid, message in hits:
        if sid not in names:
            names[sid] = store.sessions.get(sid).name
        out.append(SearchHit(session_id=sid, session_name=names[sid], message=message_info(message)))
    return SearchReply(id=req.id, hits=out, total=total, words=sorted(words(req.query)))
