"""Generations: one user turn through the model, streamed out as events.

One generation at a time per session (a second `send` waits its turn), any
number of sessions at once. The user message is stored before the call; the
assistant message after it, and only then do both join the active context. A
failure or cancel leaves the active context as it was, keeps any partial
answer in history marked `interrupted`, and ends with one `generation.error`.
"""

import asyncio
import logging
import secrets
from collections import defaultdict
from dataclasses import dataclass, field

from ..protocol import ErrorCode
from ..protocol.events import (
    ContextUsage, GenerationError, GenerationThinking, GenerationToken, QueryReceived,
    ResponseGeneration, SessionUpdated,
)
from ..protocol.models import Usage
from .batcher import TextBatcher
from .bus import EventBus
from .config import Config
from .ollama_backend import ModelCallError, OllamaBackend
from .prompt import build_messages
from .records import MessageRecord, NewMessage, SessionRecord
from .store import Store, StoreError

log = logging.getLogger(__name__)


@dataclass
class Turn:
    """One queued or running generation."""

    id: str
    session_id: str
    text: str
    think: bool | None
    task: asyncio.Task | None = None
    started: bool = False
    ended: bool = False


def usage_of(session: SessionRecord) -> Usage:
    """The session's exact usage after a completed turn."""
    window = session.window
    return Usage(tokens=session.token_count, window=window,
                 fill=session.token_count / window if window else 0.0, exact=True)


@dataclass
class Generations:
    """Runs turns, one per session at a time."""

    store: Store
    bus: EventBus
    backend: OllamaBackend
    config: Config
    _locks: dict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))
    _turns: dict[str, list[Turn]] = field(default_factory=dict)

    def busy(self, session_id: str) -> bool:
        return bool(self._turns.get(session_id))

    def running(self) -> int:
        return sum(1 for turns in self._turns.values() for t in turns if t.started)

    def submit(self, session: SessionRecord, text: str, think: bool | None) -> tuple[Turn, int]:
        """Queue a turn; returns it and how many turns of the session are ahead of it."""
        turn = Turn(id=secrets.token_hex(6), session_id=session.id, text=text, think=think)
        queue = self._turns.setdefault(session.id, [])
        ahead = len(queue)
        queue.append(turn)
        turn.task = asyncio.create_task(self._run(turn), name=f"generation-{turn.id}")
        return turn, ahead

    def cancel(self, session_id: str, generation_id: str = "") -> Turn | None:
        """Cancel the running turn of a session (or the named one, running or queued)."""
        for turn in self._turns.get(session_id, []):
            if (turn.id == generation_id) if generation_id else turn.started:
                if turn.task and not turn.task.done():
                    turn.task.cancel()
                    return turn
        return None

    async def drain(self, timeout: float) -> None:
        """Let running turns finish for up to `timeout` seconds, then cancel the rest."""
        tasks = [t.task for turns in self._turns.values() for t in turns if t.task]
        if not tasks:
            return
        log.info("waiting up to %.0f s for %d generation(s)", timeout, len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    async def _run(self, turn: Turn) -> None:
        try:
            async with self._locks[turn.session_id]:
                turn.started = True
                await self._execute(turn)
        except asyncio.CancelledError:
            if not turn.ended:  # cancelled while still queued: nothing was stored
                self._publish_error(turn, ErrorCode.CANCELLED, "cancelled before it started", "", -1)
        finally:
            queue = self._turns.get(turn.session_id, [])
            if turn in queue:
                queue.remove(turn)
            if not queue:
                self._turns.pop(turn.session_id, None)
                self._locks.pop(turn.session_id, None)

    async def _execute(self, turn: Turn) -> None:
        sid = turn.session_id
        try:
            session = self.store.session(sid)
            _, (user,) = self.store.append(sid, [NewMessage(role="user", content=turn.text)])
        except StoreError as exc:
            turn.ended = True
            self._publish_error(turn, ErrorCode.STORAGE_ERROR, str(exc), "", -1)
            return
        self.bus.publish(QueryReceived(generation_id=turn.id, message=user.info(),
                                       model=session.model), sid)
        answer: list[str] = []
        thinking: list[str] = []
        interval = self.config.token_batch_ms / 1000.0
        tokens = TextBatcher(interval, lambda i, text: self.bus.publish(
            GenerationToken(generation_id=turn.id, index=i, text=text), sid))
        thoughts = TextBatcher(interval, lambda i, text: self.bus.publish(
            GenerationThinking(generation_id=turn.id, index=i, text=text), sid))
        try:
            session = await self._window(session)
            messages = build_messages(session, self.store.active_messages(sid), user)
            options = {**session.options, "num_ctx": session.window}
            final = None
            async for chunk in self.backend.stream_chat(session.model, messages, options, turn.think):
                if chunk.message.thinking:
                    thinking.append(chunk.message.thinking)
                    thoughts.add(chunk.message.thinking)
                if chunk.message.content:
                    answer.append(chunk.message.content)
                    tokens.add(chunk.message.content)
                if chunk.done:
                    final = chunk
            thoughts.flush()
            tokens.flush()
            assert final is not None  # stream_chat raises when the final chunk is missing
            self._complete(turn, session, user, "".join(answer), "".join(thinking), final)
        except ModelCallError as exc:
            self._fail(turn, exc.code, exc.message, answer, thinking, tokens, thoughts)
        except asyncio.CancelledError:
            self._fail(turn, ErrorCode.CANCELLED, "cancelled by a client", answer, thinking,
                       tokens, thoughts)
        except StoreError as exc:
            self._fail(turn, ErrorCode.STORAGE_ERROR, f"could not store the answer: {exc}",
                       answer, thinking, tokens, thoughts)

    async def _window(self, session: SessionRecord) -> SessionRecord:
        """The session with its model's context_length (from /api/show) recorded."""
        facts = await self.backend.facts(session.model)
        if facts.context_length and facts.context_length != session.context_length:
            def record(r: SessionRecord) -> None:
                r.context_length = facts.context_length
            session = self.store.update_session(session.id, record)
        return session

    def _complete(self, turn: Turn, session: SessionRecord, user: MessageRecord,
                  answer: str, thinking: str, final) -> None:
        token_count = int(final.prompt_eval_count or 0)
        eval_count = int(final.eval_count or 0)
        session, (assistant,) = self.store.append(
            session.id,
            [NewMessage(role="assistant", content=answer, thinking=thinking,
                        model=session.model, eval_count=eval_count)],
            activate_seqs=[user.seq], activate=[0], token_count=token_count)
        turn.ended = True
        window = session.window
        truncated = token_count >= window
        if truncated:
            log.warning("session=%s prompt_eval_count %d reached the window %d: "
                        "Ollama may have cut the prompt", session.id, token_count, window)
        self.bus.publish(ResponseGeneration(
            generation_id=turn.id, message=assistant.info(), token_count=token_count,
            eval_count=eval_count, window=window, truncated=truncated,
            total_duration=int(final.total_duration or 0),
            load_duration=int(final.load_duration or 0),
            prompt_eval_duration=int(final.prompt_eval_duration or 0),
            eval_duration=int(final.eval_duration or 0)), session.id)
        self.bus.publish(SessionUpdated(session=session.info(busy=len(self._turns.get(session.id, [])) > 1)),
                         session.id)
        self.bus.publish(ContextUsage(usage=usage_of(session)), session.id)
        log.info("session=%s generation=%s done: %d prompt tokens, %d answer tokens",
                 session.id, turn.id, token_count, eval_count)

    def _fail(self, turn: Turn, code: ErrorCode, message: str, answer: list[str],
              thinking: list[str], *batchers: TextBatcher) -> None:
        for batcher in batchers:
            batcher.flush()
        turn.ended = True
        partial = "".join(answer)
        stored_seq = -1
        try:
            _, (record,) = self.store.append(turn.session_id, [NewMessage(
                role="assistant", content=partial, thinking="".join(thinking),
                status="interrupted", error=code.value)])
            stored_seq = record.seq
        except StoreError as exc:
            log.error("session=%s could not keep the interrupted answer: %s", turn.session_id, exc)
        self._publish_error(turn, code, message, partial, stored_seq)

    def _publish_error(self, turn: Turn, code: ErrorCode, message: str, partial: str,
                       stored_seq: int) -> None:
        log.log(logging.INFO if code == ErrorCode.CANCELLED else logging.WARNING,
                "session=%s generation=%s %s: %s", turn.session_id, turn.id, code.value, message)
        self.bus.publish(GenerationError(generation_id=turn.id, code=code.value, message=message,
                                         partial=partial, stored_seq=stored_seq), turn.session_id)
