"""send and cancel: user turns and stopping them."""

import msgspec

from ctxkeep.daemon.backends.protocol import ChatExtras
from ctxkeep.daemon.context.shorten import shortened
from ctxkeep.daemon.files.chunker import kind_of, summarize
from ctxkeep.daemon.files.expand import FileSettings, find_refs
from ctxkeep.daemon.handlers.registry import Caller, RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.images import ImageRejected, decoded
from ctxkeep.daemon.store.records import Attachment, NewMessage, SessionRecord
from ctxkeep.daemon.turns.answer_format import schema_problem
from ctxkeep.daemon.turns.limits import refuse_oversized
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.images import ImageInput, ImageRef
from ctxkeep.protocol.replies import Accepted, Cancelled
from ctxkeep.protocol.tools import ToolCall, ToolResult, results_text
from ctxkeep.protocol.turn_requests import Turn


def refuse_unless_idle(services: Services, record: SessionRecord, doing: str) -> None:
    """Refuse to `doing` (regenerate, edit, ...) while the daemon stops or the session works."""
    if services.stopping():
        raise RequestError(ErrorCode.SHUTTING_DOWN, f"ctxkeepd is shutting down: {doing} once it is back")
    if services.jobs.busy(record.id):
        raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is busy: {doing} once its turn or "
                                           "compaction is done, or cancel it")


def extras(req: Turn, record: SessionRecord) -> ChatExtras:
    """What a turn asks of its model call besides the prompt: the request's tools, or the
    session's."""
    problem = schema_problem(req.format)
    if problem:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"format: the JSON schema cannot be used: {problem}")
    tools = record.tools if req.tools is None else req.tools
    return ChatExtras(think=req.think, format=req.format, keep_alive=req.keep_alive,
                      tools=msgspec.to_builtins(tools) or None)


def last_calls(services: Services, record: SessionRecord) -> list[ToolCall]:
    """The session's last message's tool calls, when it is a whole answer calling some
    (compaction summaries stored after it aside)."""
    if not record.next_seq:  # a new session: nothing to read
        return []
    tail = services.store.history.messages(record.id, range(max(0, record.next_seq - 8), record.next_seq))
    last = next((m for m in reversed(tail) if m.kind == "message"), None)
    if last is None or last.role != "assistant" or last.status != "complete":
        return []
    return last.tool_calls


def result_outlines(calls: list[ToolCall], results: list[ToolResult]) -> list[str]:
    """Each long result that is a file's text (its call names a path of a kind with an
    outline: `read_file({"path": "app.py"})`) as the file's outline (level 1's short form of
    it), else ""."""
    paths: dict[str, str] = {}
    for c in calls:
        named = [v for v in c.function.arguments.values() if isinstance(v, str) and kind_of(v) != "text"]
        paths.setdefault(c.function.name, named[0] if named else "")
    return [summarize(paths[r.tool_name], r.content) if paths.get(r.tool_name) and shortened(r.content) != r.content
            else "" for r in results]


def tool_message(services: Services, record: SessionRecord, req: requests.Send) -> NewMessage:
    """The `tool` message of a send's tool results, which must answer the calls of the
    session's last message (the chat templates refuse a tool message that does not)."""
    if req.text.strip():
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "send the tool results alone (no text); the "
                                                       "model answers them, then send your message")
    if record.pending:  # a compaction after the answer may run: the results wait for it
        raise RequestError(ErrorCode.BUSY, f"session {record.name!r} is busy: tool results answer the "
                                           "calls of its last answer, so send them once it is stored")
    calls = last_calls(services, record)
    called = {c.function.name for c in calls}
    if not called:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"session {record.name!r} does not end with an "
                                                       "answer that calls tools: there is nothing to "
                                                       "send tool results for")
    unknown = sorted({r.tool_name for r in req.tool_results} - called)
    if unknown:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"no call of the last answer is to {unknown[0]!r}: "
                                                       f"it called {', '.join(sorted(called))}")
    return NewMessage(role="tool", content=results_text(req.tool_results), tool_results=req.tool_results,
                      result_outlines=result_outlines(calls, req.tool_results))


async def attachments(services: Services, record: SessionRecord, text: str, cwd: str,
                      caller: Caller, images: bool = False) -> list[Attachment]:
    """A new message's @file references, read now, as they are when the user sends, off the
    event loop (a message that names none does not pay the hop; large ones are read in a
    worker process). An empty message (no text, no `images`) is refused."""
    if not text.strip() and not images:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "the message is empty")
    if not (caller.files and find_refs(text)):
        return []
    return await services.files.expand(text, cwd, FileSettings.of(services.config, caller.remote, record.window),
                                       services.estimator.weights(record.model))


async def stored_images(services: Services, images: list[ImageInput]) -> list[ImageRef]:
    """A message's images, checked and stored (off the event loop), as references."""
    config, store = services.config, services.store
    if len(images) > config.max_images_per_message:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"{len(images)} images: a message may carry at most "
                                                       f"{config.max_images_per_message} "
                                                       "(max_images_per_message in config.toml)")

    def put() -> list[ImageRef]:
        refs = []
        for i, image in enumerate(images):
            data, kind = decoded(image, i, config.max_image_bytes)
            refs.append(store.images.put(data, kind, image.name))
        return refs
    try:
        return await store.off_loop(put) if images else []
    except ImageRejected as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, str(exc)) from None


@handles(requests.Send, session=True, waits=True, caller=True)
async def send(services: Services, req: requests.Send, record: SessionRecord, *,
               caller: Caller) -> Accepted:
    if services.stopping():
        raise RequestError(ErrorCode.SHUTTING_DOWN, "ctxkeepd is shutting down: send again "
                                                    "once it is back")
    asked = extras(req, record)  # refused before anything is stored
    refuse_oversized(record, req.text)
    if req.tool_results:
        if req.images:
            raise RequestError(ErrorCode.INVALID_ARGUMENT, "tool results cannot carry images: send "
                                                           "them alone, then your message with the images")
        files, new = [], tool_message(services, record, req)
    else:
        calls = sorted({c.function.name for c in last_calls(services, record)})
        if calls:
            raise RequestError(ErrorCode.INVALID_ARGUMENT, f"the last answer called {', '.join(calls)}: send "
                                                           "what they returned (`tool_results`) first, or "
                                                           "regenerate it")
        files = await attachments(services, record, req.text, req.cwd, caller, bool(req.images))
        new = NewMessage(role="user", content=req.text, files=files,
                         images=await stored_images(services, req.images))
    job, ahead, _ = await services.generations.accept(record, new, asked)
    warnings = [f"@{f.path}: {f.error}" for f in files if f.error]
    facts = services.backend.known_facts(record.model)
    if req.images and facts is not None and "vision" not in facts.capabilities:  # said, not silently done
        warnings.append(f"{record.model} does not see images (its /api/show lists no vision): it reads each "
                        "one's name in its place ([image: NAME]); set a model with vision "
                        f"(`ctxkeep set {record.name} --model M`) for it to see them")
    return Accepted(id=req.id, session_id=record.id, generation_id=job.id, ahead=ahead,
                    files=[f.info() for f in files], warnings=warnings)


@handles(requests.Cancel, session=True)
async def cancel(services: Services, req: requests.Cancel, record: SessionRecord) -> Cancelled:
    job = services.jobs.cancel(record.id, req.generation_id)
    return Cancelled(id=req.id, session_id=record.id, cancelled=job is not None,
                     generation_id=job.id if job else "", compaction=job is not None and job.ended)
