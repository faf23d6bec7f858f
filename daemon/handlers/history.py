"""history: the full, append-only history of a session, in pages."""

import msgspec

from ctxkeep.daemon.compaction.planner import compaction_marker
from ctxkeep.daemon.handlers.registry import handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import requests
from ctxkeep.protocol.replies import HistoryReply
from ctxkeep.protocol.structs import CompactionMark


@handles(requests.History, session=True)
async def history(services: Services, req: requests.History, record: SessionRecord) -> HistoryReply:
    if req.active:
        # The active context is in prompt order (a summary before the messages it kept),
        # so a page starts at the position of `start` in it, not at seqs >= start.
        messages, nxt, total = services.store.history.active_page(record.id, req.start, req.limit)
    else:
        messages, nxt, total = services.store.history.page(record.id, req.start, req.limit)
    # Each message's JSON is encoded once and kept (stored messages never change); the
    # page goes into the reply as it is (msgspec.Raw), under the frame cap: a shorter
    # page, with `next` pointing on.
    parts = services.store.history.message_cache.encoded_infos(record.id, messages)
    budget, size, kept = services.config.max_frame_bytes // 2, 0, len(parts)
    for i, part in enumerate(parts):
        size += len(part) + 1
        if size > budget and i > 0:
            kept, nxt = i, messages[i].seq
            break
    page = msgspec.Raw(b"[" + b",".join(parts[:kept]) + b"]")
    marks = [] if req.active or not kept else \
        compaction_marks(services, record, messages[0].seq, messages[kept - 1].seq)
    return HistoryReply(id=req.id, session_id=record.id, messages=page,  # type: ignore[arg-type]
                        next=nxt, total=total, compactions=marks)


def compaction_marks(services: Services, record: SessionRecord, first: int, last: int) -> list[CompactionMark]:
    """The compactions between messages `first` and `last` (or just after it), with the
    line the live `compaction.result` showed."""
    return [CompactionMark(at=c.at_seq, marker=compaction_marker(c.tokens_before, c.tokens_after, c.level),
                           level=c.level, time=c.time)
            for c in services.store.context.compactions(record.id) if first < c.at_seq <= last + 1]
