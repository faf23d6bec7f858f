"""A chat request from a stateless client, run as a turn of a session: the session its
conversation continues (or a new one, or a branch), the model and options it names, the
new message sent through the same handler as `send`, and the turn's events as they come."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ctxkeep.daemon.backends.options import check_options
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.handlers.dispatch import dispatch
from ctxkeep.daemon.handlers.registry import Caller
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.daemon.store.store import UnknownSession
from ctxkeep.daemon.transports.http.conversations import ConversationIndex, chain, sent_keys
from ctxkeep.daemon.transports.http.errors import HttpError
from ctxkeep.daemon.turns.answer_format import schema_problem
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.chat_shapes import NotAMessage, imported
from ctxkeep.protocol.imported import ImportedMessage
from ctxkeep.protocol.limits import NumCtx, Options, OptionValue, OutOfRange, checked
from ctxkeep.protocol.replies import Error, Reply, SessionReply
from ctxkeep.protocol.tools import ToolSpec

#: Messages the conversation index may read on the event loop (more: in the writer thread).
FOLD_ON_LOOP = 64
#: Text the conversation's keys may be made of on the event loop (more: a worker thread).
KEYS_ON_LOOP_CHARS = 64 * 1024
#: How much of the first message names a new session.
NAME_CHARS = 48


@dataclass
class ChatRequest:
    """What an Ollama or OpenAI chat request asks, in the engine's terms."""

    model: str
    system: str
    #: The conversation before the new message, oldest first.
    history: list[ImportedMessage]
    #: The new message: the user's (text, images), or the results of the last answer's calls.
    new: ImportedMessage
    options: dict[str, Any] = field(default_factory=dict)
    #: The tools the model may call in this turn (none: none).
    tools: list[ToolSpec] = field(default_factory=list)
    num_ctx: int | None = None
    think: bool | str | None = None
    #: "json" or a JSON schema for the answer (Ollama's `format`).
    format: str | dict[str, Any] | None = None
    #: How long the model stays loaded after the turn (Ollama's `keep_alive`).
    keep_alive: str | float | None = None
    #: A session picked by name (X-Ctxkeep-Session or a `session` field): "" = match.
    session: str = ""
    #: Memory across sessions for the session (X-Ctxkeep-Memory; None: as it is).
    memory: str | None = None
    #: The new message is the stored session's last, unanswered (its turn failed, or the
    #: daemon stopped under it): it is asked again there, not stored twice.
    retry: bool = False
    #: The conversation ends with the answer to its last question, sent back to go on from
    #: (the way Ollama's and OpenAI's clients ask a model to continue): that answer continues.
    continues: bool = False


def settings(options: dict[str, Any] | None, num_ctx: Any = None) -> tuple[dict[str, Any], int | None]:
    """A request's model options and window (`num_ctx`, in `options` or beside them), each in
    its documented range (the protocol's own types), or HttpError(400) naming the first that
    is not. Checked before a session is looked up, so a refused request stores nothing."""
    options = dict(options or {})
    if "num_ctx" in options:
        num_ctx = options.pop("num_ctx")
    try:
        window = checked(num_ctx, NumCtx | None, "num_ctx")
        for key, value in options.items():
            checked(value, OptionValue, f"options.{key}")
        return checked(options, Options, "options"), window
    except OutOfRange as exc:
        raise HttpError(ErrorCode.INVALID_REQUEST.value, str(exc)) from None


def check_extras(think: object, format: object) -> None:
    """Refuse a `think` or `format` Ollama would not take, saying what it takes."""
    if not (think is None or isinstance(think, bool) or think in ("low", "medium", "high")):
        raise HttpError(ErrorCode.INVALID_REQUEST.value,
                        f'think must be true, false, "low", "medium" or "high", not {think!r}')
    if not (format is None or format == "json" or isinstance(format, dict)):
        raise HttpError(ErrorCode.INVALID_REQUEST.value,
                        f'format must be "json" or a JSON schema (an object), not {format!r}')
    problem = schema_problem(format)
    if problem:
        raise HttpError(ErrorCode.INVALID_REQUEST.value, f"format: the JSON schema cannot be used: {problem}")


def split_messages(raw: list[dict[str, Any]]) -> tuple[str, list[ImportedMessage], ImportedMessage, bool]:
    """(system prompt, the conversation before the new message, the new message) of a chat's
    messages in Ollama's or OpenAI's shape."""
    try:
        messages = imported(raw)
    except NotAMessage as exc:
        raise HttpError(ErrorCode.INVALID_REQUEST.value, str(exc)) from None
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    talk = [m for m in messages if m.role != "system"]
    continues = len(talk) >= 2 and talk[-1].role == "assistant" and not talk[-1].tool_calls \
        and bool(talk[-1].content.strip()) and talk[-2].role == "user"
    if continues:  # the answer sent back unfinished: the model goes on from it
        talk = talk[:-1]
    last = talk[-1] if talk else None
    if last is None or not (last.role == "tool" or last.role == "user" and (last.content.strip() or last.images)):
        raise HttpError(ErrorCode.INVALID_REQUEST.value, "the last message must be the user's (not empty), "
                        "the results of the last answer's tool calls (the new turn), or the last answer "
                        "(to go on from it)")
    return system, talk[:-1], last, continues


def tools_of(raw: list[Any] | None) -> list[ToolSpec]:
    """A request's `tools` (Ollama's and OpenAI's shape is the same)."""
    try:
        return msgspec.convert(raw or [], list[ToolSpec])
    except msgspec.ValidationError as exc:
        raise HttpError(ErrorCode.INVALID_REQUEST.value, f"tools: {exc}") from None


class Chats:
    """Runs chat requests as session turns, for every HTTP API."""

    def __init__(self, services: Services, caller: Caller) -> None:
        self.services = services
        self.caller = caller
        self.index = ConversationIndex(services.store)
        self._folding = asyncio.Lock()
        self._stop_listening = services.bus.listen(self.index.seen)

    def close(self) -> None:
        self._stop_listening()

    async def intake(self, count: int, read: Callable[..., ChatRequest], *args: Any) -> ChatRequest:
        """`read(*args)`: a request of `count` messages in the engine's terms, refused (413)
        past http_max_messages, read in a worker thread when it is long."""
        most = self.services.config.http_max_messages
        if count > most:
            raise HttpError(ErrorCode.INVALID_REQUEST.value, f"{count:,} messages in one request: at most {most:,} "
                            "are taken (http_max_messages). Import a longer history with `ctxkeep import`, "
                            "then continue it by name (X-Ctxkeep-Session) sending only the new message", 413)
        return await asyncio.to_thread(read, *args) if count > FOLD_ON_LOOP else read(*args)

    async def call(self, request: requests.Request) -> Reply:
        """A request through the handlers (as any transport makes one); errors raised."""
        reply = await dispatch(self.services, request, self.caller)
        if isinstance(reply, Error):
            raise HttpError(reply.code, reply.message)
        return reply

    async def session_for(self, chat: ChatRequest) -> tuple[str, bool]:
        """The session this conversation continues, branches from, or starts, and whether it
        was made for this request; its model and options set as the request names them (a
        session made for a request that is then refused is deleted again)."""
        if chat.options:  # Ollama's option names and types, before anything is stored
            try:
                await asyncio.to_thread(check_options, chat.options)
            except RequestError as exc:
                raise HttpError(exc.code.value, exc.message) from None
        made = False
        if chat.session:
            session, made = await self._named(chat)
            chat.retry = not made and self._resent(session, chat.new)
        else:
            async with self._folding:  # one fold at a time, on the loop or off it
                if self.index.unread() <= FOLD_ON_LOOP:  # a turn's few messages: no thread hop
                    self.index.refresh()
                else:
                    await self.services.store.off_loop(self.index.refresh)
            sent = [*chat.history, chat.new]
            heavy = len(sent) > FOLD_ON_LOOP or any(m.images for m in sent) \
                or sum(len(m.content) for m in sent) > KEYS_ON_LOOP_CHARS

            def hashed() -> list[bytes]:
                return chain(chat.system, sent_keys(sent))
            hashes = await asyncio.to_thread(hashed) if heavy else hashed()
            again = self.index.find_chain(hashes) if chat.new.role == "user" else None
            answered = self.index.answered(hashes) if chat.new.role == "user" and not chat.new.images else None
            match = self.index.find_chain(hashes[:-1])
            if again is not None and again.continues and again.session:  # a retry of the last question
                session, chat.retry = self.services.store.sessions.get(again.session), True
            elif answered is not None:  # a retry of the last question, its answer missed
                session, chat.retry = self.services.store.sessions.get(answered), True
            elif match.continues and match.session:
                session = self.services.store.sessions.get(match.session)
            else:
                session = await self._start(chat, match.session, match.shared, match.at_seq)
                made = True
        if chat.continues and not chat.retry:
            await self.discard(session.id, made)
            raise HttpError(ErrorCode.INVALID_ARGUMENT.value, "a conversation that ends with an answer continues "
                            "that answer where ctxkeepd gave it: no session holds this one as its last")
        try:
            return await self._configure(session, chat), made
        except HttpError:
            await self.discard(session.id, made)
            raise

    async def discard(self, session_id: str, made: bool) -> None:
        """Delete a session made for a request that was then refused (it stores nothing)."""
        if made:
            await asyncio.shield(dispatch(self.services, requests.SessionDelete(session=session_id), self.caller))

    def _resent(self, session: SessionRecord, new: ImportedMessage) -> bool:
        """Whether `new` is the session's last question sent again, with nothing said since
        but its answer (a client's retry, after it hung up): it is answered again, in place
        of the answer it may have missed (kept as an alternative), not stored twice — as a
        stateless client's resent conversation is."""
        if new.role != "user" or new.tool_results or new.images:
            return False
        last, _, _ = self.services.store.history.page(session.id, start=max(0, session.next_seq - 2), limit=2)
        questions = [m for m in last if m.role == "user"]
        if not questions or questions[-1].content != new.content:
            return False
        return all(m.role == "assistant" and m.reply_to == questions[-1].seq for m in last if m.seq > questions[-1].seq)

    async def _named(self, chat: ChatRequest) -> tuple[SessionRecord, bool]:
        try:
            return self.services.store.sessions.get(chat.session), False
        except UnknownSession:
            pass  # made with that name, the conversation imported
        try:
            reply = await self.call(requests.SessionImport(
                name=chat.session, model=chat.model, system=chat.system, messages=chat.history))
        except HttpError as exc:
            if "exists already" not in exc.message:
                raise
            return self.services.store.sessions.get(chat.session), False  # made meanwhile by another request
        assert isinstance(reply, SessionReply)
        return self.services.store.sessions.get(reply.session.id), True

    async def _start(self, chat: ChatRequest, source: str | None, shared: int, at_seq: int
                     ) -> SessionRecord:
        """A new session. When the conversation shares its start with a stored one (an
        edited or regenerated message), a branch of that one at the last message they share
        (its context as it stood then, compactions included) with the client's later
        messages added; else the conversation imported, named after its first message."""
        if source is not None:
            reply = await self.call(requests.Branch(session=source, at=at_seq))
            assert isinstance(reply, SessionReply)
            if len(chat.history) > shared:
                await self.call(requests.SessionImport(session=reply.session.id, messages=chat.history[shared:]))
            return self.services.store.sessions.get(reply.session.id)
        first = chat.history[0].content if chat.history else chat.new.content
        name = " ".join(first[:NAME_CHARS * 4].split())[:NAME_CHARS]
        for attempt in range(1, 100):
            try:
                reply = await self.call(requests.SessionImport(
                    name=name if attempt == 1 else f"{name} {attempt}", model=chat.model,
                    system=chat.system, messages=chat.history))
                break
            except HttpError as exc:
                if "exists already" not in exc.message:  # another session has that name
                    raise
        assert isinstance(reply, SessionReply)
        return self.services.store.sessions.get(reply.session.id)

    async def _configure(self, session: SessionRecord, chat: ChatRequest) -> str:
        change = requests.SetModel(session=session.id)
        if chat.model and chat.model != session.model:
            change.model = chat.model
        if chat.options and chat.options != session.options:
            change.options = chat.options
        if chat.num_ctx and chat.num_ctx != session.num_ctx:
            change.num_ctx = chat.num_ctx
        if chat.memory and chat.memory != session.memory:
            change.memory = chat.memory  # type: ignore[assignment]
        if change.model or change.options is not None or change.num_ctx is not None or change.memory:
            await self.call(change)
        return session.id
