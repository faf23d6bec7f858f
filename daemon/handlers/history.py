"""history: the full, append-only history of a session, in pages."""

from ...protocol import encode, requests
from ...protocol.replies import HistoryReply
from .registry import handles


@handles(requests.History)
async def history(daemon, req: requests.History) -> HistoryReply:
    record = daemon.store.session(req.session)
    if req.active:
        active = daemon.store.active_messages(record.id)
        page = [m for m in active if m.seq >= req.start][:req.limit]
        later = [m for m in active if m.seq > page[-1].seq] if page else []
        messages, nxt, total = page, (later[0].seq if later else None), len(active)
    else:
        messages, nxt, total = daemon.store.history(record.id, req.start, req.limit)
    infos = [m.info() for m in messages]
    # Keep the reply under the frame cap: a shorter page, with `next` pointing on.
    budget, size, kept = daemon.config.max_frame_bytes // 2, 0, 0
    for kept, info in enumerate(infos):
        size += len(encode(info))
        if size > budget and kept > 0:
            infos, nxt = infos[:kept], info.seq
            break
    return HistoryReply(id=req.id, session_id=record.id, messages=infos, next=nxt, total=total)
