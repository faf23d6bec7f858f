"""The store's records as the protocol shows them: a session's `SessionInfo` and a message's
`MessageInfo`. The mapping between the storage schema and the wire types, in one place, so
that each can change apart (records.py only stores)."""

from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.protocol.structs import MessageInfo, SessionInfo

#: The most a count may be on the wire (JSON clients read numbers as doubles).
MOST = 2**53


def session_info(record: SessionRecord, busy: bool = False, reliability: float = 1.0) -> SessionInfo:
    """The session as clients see it, with the reliability score its caller computed
    (context/reliability.py: the store does not judge)."""
    return SessionInfo(
        id=record.id, name=record.name, model=record.model, system=record.system,
        options=record.options, num_ctx=min(max(record.num_ctx, 0), MOST), window=min(max(record.window, 0), MOST),
        created=record.created, updated=record.updated, message_count=record.message_count,
        token_count=record.count.tokens, token_count_exact=record.count.exact,
        next_tokens=record.count.next_prompt, busy=busy,
        compactions=record.compactions, compaction_model=record.compaction_model,
        reliability=round(reliability, 4),
        auto_compaction=record.auto_compaction, thresholds=record.thresholds,
        recall=record.recall, recall_budget=record.recall_budget,
        memory=record.memory, remembered=record.remembered, forgotten=record.forgotten,  # type: ignore[arg-type]
        cache_hit_rate=record.cache.hit_rate,
        branched_from=record.branched_from, branched_at=record.branched_at, tools=record.tools)


def message_info(record: MessageRecord) -> MessageInfo:
    """The message as clients see it."""
    fields = {f: getattr(record, f) for f in MessageInfo.__struct_fields__ if f != "files"}
    return MessageInfo(**fields, files=[f.info() for f in record.files])
