"""session.import: a conversation brought in from an export or another tool."""


from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.handlers.sessions import announce_new, new_session
from ctxkeep.daemon.handlers.turns import stored_images
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.imported import ImportedMessage
from ctxkeep.protocol.replies import SessionReply
from ctxkeep.protocol.tools import results_text


def kept(messages: list[ImportedMessage], first: int, appending: bool = False) -> list[int]:
    """Which of the messages (the first to be seq `first`) join the active context: all
    but those a later one replaced (a regenerated answer's predecessor; an edited
    question and its answers). Links that do not point back, and tool messages that answer
    no calls (or calls no tool message answers), are refused (`appending`: the first may
    answer the session's own last calls)."""
    replaced: set[int] = set()
    for i, m in enumerate(messages):
        before = messages[i - 1] if i else None
        if (m.role == "tool") != bool(before and before.tool_calls) and not (appending and i == 0):
            raise RequestError(ErrorCode.INVALID_ARGUMENT, f"message {i + 1}: " + (
                "a tool message must follow the answer whose calls it answers" if m.role == "tool" else
                "an answer that calls tools must be followed by one tool message with their results"))
        if max(m.reply_to, m.alternative_of) >= first + i:
            raise RequestError(ErrorCode.INVALID_ARGUMENT, f"message {i + 1}: reply_to and alternative_of "
                                                           "must name an earlier message (its seq)")
        if m.alternative_of >= 0:
            replaced.add(m.alternative_of)
            if m.role == "user":
                replaced |= {first + j for j, a in enumerate(messages) if a.reply_to == m.alternative_of}
    return [i for i in range(len(messages)) if first + i not in replaced]


def answered(messages: list[ImportedMessage], first: int) -> list[int]:
    """Each message's `reply_to`: as given, else, for an answer, the last question before
    it in the import (an HTTP client's or an export's conversation seldom says which
    question an answer answers, and recall brings an answer back with its question)."""
    out, question = [], -1
    for i, m in enumerate(messages):
        if m.role == "user":
            question = first + i
        out.append(m.reply_to if m.reply_to >= 0 or m.role != "assistant" else question)
    return out


@handles(requests.SessionImport, waits=True)
async def import_session(services: Services, req: requests.SessionImport) -> SessionReply:
    """A new session (made as `session.create` makes one) with the messages, all of them
    active (the next turn's check compacts what does not fit), or, with `session`, the
    messages appended to that session."""
    store = services.store
    if req.session:
        record = store.sessions.get(req.session)
        if services.jobs.busy(record.id):
            raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is busy: import into it "
                                               "once its turn or compaction is done")
    else:
        source = store.sessions.get(req.branched_from).id if req.branched_from else ""
        record = await new_session(services, req, source, req.branched_at if source else -1)
    if req.messages:
        images = [await stored_images(services, m.images) if m.images else [] for m in req.messages]
        start, active = record.next_seq, kept(req.messages, record.next_seq, bool(req.session))

        def append() -> None:  # thousands of records: made by the writer thread, not the loop
            store.history.append(record.id, [
                NewMessage(role=m.role, content=results_text(m.tool_results) if m.tool_results else m.content,
                           thinking=m.thinking, kind=m.kind, status=m.status, error=m.error, reply_to=question,
                           alternative_of=m.alternative_of, tool_calls=m.tool_calls, tool_results=m.tool_results,
                           images=refs, said_at=m.created or 0.0)
                for m, refs, question in zip(req.messages, images, answered(req.messages, start))], activate=active)
        await store.off_loop(append)
        record = await services.announcer.prompt_changed(record.id)  # the count is now an estimate
        # indexed for recall now (a worker thread for a large one; embeddings in the background)
        services.recaller.prepare(record.id)
    if not req.session:
        return SessionReply(id=req.id, session=announce_new(services, record))
    return SessionReply(id=req.id, session=services.announcer.announced(record.id))
