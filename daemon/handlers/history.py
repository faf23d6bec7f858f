"""history: the full, append-only history of a session, in pages."""

from ctxkeep.protocol import encode, requests
from ctxkeep.protocol.replies import HistoryReply
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.handlers.registry import handles


@handles(requests.History, session=True)
async def history(services: Services, req: requests.History, record: SessionRecord) -> HistoryReply:
    if req.active:
        # The active context is in prompt order (a summary before the messages it kept),
        # so a page starts at the position of `start` in it, not at seqs >= start.
        messages, nxt, total = services.store.active_page(record.id, req.start, req.limit)
    else:
        messages, nxt, total = services.store.history(record.id, req.start, req.limit)
    infos = [m.info() for m in messages]
    # Keep the reply under the frame cap: a shorter page, with `next` pointing on (each
    # message measured only when the whole page is over the cap).
    budget, size, kept = services.config.max_frame_bytes // 2, 0, 0
    for kept, info in enumerate(infos if len(encode(infos)) > budget else ()):
        size += len(encode(info))
        if size > budget and kept > 0:
            infos, nxt = infos[:kept], info.seq
            break
    return HistoryReply(id=req.id, session_id=record.id, messages=infos, next=nxt, total=total)
