"""Summaries for every kind of compaction: chunks sized to the compaction model's window,
one call per chunk then merge calls; a call the model refuses as too long is split. Where
the model's server holds the session's last turn, a call goes on from its opening (the
messages summarized, or the system message) and the server reads only the request."""

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from ctxkeep.daemon.backends.protocol import ModelBackend, ModelCallError
from ctxkeep.daemon.compaction.chunks import chunk_lines, halves
from ctxkeep.daemon.compaction.planner import compaction_model
from ctxkeep.daemon.compaction.prompts import (
    COMPACTION_SYSTEM,
    MERGE_SYSTEM,
    continuation,
    summary_call,
    transcript_line,
)
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.estimator import SLACK, Estimator
from ctxkeep.daemon.context.prompt import Message
from ctxkeep.daemon.context.served import LastPrompts, Opening, Served, opening_through, system_opening
from ctxkeep.daemon.context.speeds import Speeds
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.protocol import ErrorCode

log = logging.getLogger(__name__)

_HEADER = "Conversation to summarize:"
#: The fewest tokens of text a summarization call must be able to take.
MIN_CALL_BUDGET = 64
#: The least room a summary asked as the last turn's continuation may be left.
MIN_IN_PLACE_ROOM = 32
#: What a summary asked after the conversation's opening summarizes.
IN_PLACE_BODY = ("the conversation above, but for the summaries of its earlier parts at its start (they stay "
                 "as they are): your summary replaces it.")
_MERGE_HEADER = "Summaries of consecutive parts of the conversation, in order:"


class SummaryRejected(Exception):
    """The model's summary cannot stand for what it would replace."""


#: What a compaction's summaries report: (step, steps, what was done, seconds the rest
#: should take or None).
Progress = Callable[[int, int, str, "float | None"], None]


@dataclass
class Summarizer:
    """Summarization calls that never overflow the summarizing model's window."""

    backend: ModelBackend
    estimator: Estimator
    model: str
    window: int
    #: The most tokens one summary may take (num_predict).
    room: int
    #: Estimated tokens of text one call may be given.
    budget: int
    #: Where each call's timings teach the model's speeds.
    speeds: Speeds | None = None
    #: The session's last turn as the model's server read it, where a call may go on from
    #: its opening (read from the server's cache); None: each call is read whole.
    served: Served | None = None
    #: Told of each call that goes on from none of it (the server's cache then holds that).
    last_prompts: LastPrompts | None = None

    @classmethod
    async def for_session(cls, backend: ModelBackend, estimator: Estimator, config: Config,
                          session: SessionRecord, speeds: Speeds | None = None) -> "Summarizer":
        """The summarizer of `session`'s compactions (planner.compaction_model)."""
        found = await cls.for_model(backend, estimator, compaction_model(session, config),
                                    session.num_ctx, config.summary_max_tokens)
        found.speeds = speeds
        return found

    def continuing(self, last_prompts: LastPrompts, session_id: str) -> "Summarizer":
        """Calls that go on from `session_id`'s last turn where its model's server read it
        last (the summarizing model is the session's), each told to `last_prompts` otherwise."""
        self.served, self.last_prompts = last_prompts.of(session_id, self.model), last_prompts
        return self

    def opening_through(self, seq: int) -> Opening | None:
        """The last turn's prompt through stored message `seq`, where the server holds it so."""
        return opening_through(self.served, seq, self.estimator) if self.served else None

    def in_place(self, request: str, room: int | None, opening: Opening | None) -> tuple[list[Message], int] | None:
        """The messages of a call that asks `request` after `opening`, and the room its answer
        takes: `room`, or what the window leaves after them where that is at least half of it
        (a shorter summary is also sooner written); else None: a call of its own."""
        if opening is None:
            return None
        room = room or self.room
        asked = math.ceil(self.estimator.text(self.model, request) * (1 + self.estimator.margin(self.model)))
        left = self.window - opening.tokens - asked - SLACK
        if left < max(MIN_IN_PLACE_ROOM, room // 2):
            return None
        return [*opening.messages, {"role": "user", "content": request}], min(room, left)

    @classmethod
    async def for_model(cls, backend: ModelBackend, estimator: Estimator, model: str,
                        num_ctx: int, max_room: int) -> "Summarizer":
        """Calls sized by cautious counts: a chunk's estimate, raised by the model's measured
        error, leaves the summary its room."""
        facts = await backend.facts(model)
        window = min(num_ctx, facts.context_length) if facts.context_length else num_ctx
        room = min(max_room, window // 4)
        system_cost = estimator.prompt(model, summary_call(COMPACTION_SYSTEM, "", "", _HEADER)) + 400
        budget = (window - room - system_cost) / (1 + estimator.margin(model)) - SLACK
        return cls(backend, estimator, model, window, room, int(budget))

    def check_room(self) -> None:
        """Refuse to start when the summarizing model's window leaves no room for text."""
        if self.budget < MIN_CALL_BUDGET:
            raise RequestError(ErrorCode.CONTEXT_OVERFLOW,
                               f"the compaction model's window ({self.window:,} tokens) leaves no room "
                               "for a summarization call: raise num_ctx or set compaction_model")

    def chunks(self, messages: list[MessageRecord]) -> list[str]:
        lines = [(line, self.estimator.text(self.model, line)) for line in map(transcript_line, messages)]
        return chunk_lines(lines, self.budget)

    async def call(self, system: str, instructions: str, body: str, header: str,
                   room: int | None = None, shown: str = "") -> tuple[str, int]:
        """One summary: (text, its tokens). Raises SummaryRejected on an empty one. A call
        the model refuses as too long (an estimate too low) is split in two and each half
        summarized, the summaries joined. `shown`: where the last turn's system message
        shows `body`, in words (a call that goes on from it names it there, not again)."""
        try:
            return await self._call(system, instructions, body, header, room, shown)
        except ModelCallError as exc:
            cut = halves(body)
            if exc.code is not ErrorCode.CONTEXT_OVERFLOW or cut is None:
                raise
        log.info("a summarization call of ~%d tokens was refused as too long: split in two",
                 self.estimator.text(self.model, body))
        first = await self.call(system, instructions, cut[0], header, room)
        second = await self.call(system, instructions, cut[1], header, room)
        return f"{first[0]}\n\n{second[0]}", first[1] + second[1]

    async def _call(self, system: str, instructions: str, body: str, header: str,
                    room: int | None, shown: str = "") -> tuple[str, int]:
        """One summary: after the last turn's system message where that fits (read from the
        server's cache: its checkpoints among it), else on its own."""
        opening = system_opening(self.served, self.estimator, self.model) if self.served else None
        found = self.in_place(continuation(system, instructions, shown or body, header), room, opening)
        if found is not None and (made := await self._ask_in_place(*found)) is not None:
            return made
        if self.last_prompts is not None:
            self.last_prompts.other(self.model)
        return await self._ask(summary_call(system, instructions, body, header), room)

    async def _ask(self, messages: list[Message], room: int | None) -> tuple[str, int]:
        options = {"num_ctx": self.window, "num_predict": room or self.room}
        response = await self.backend.chat_once(self.model, messages, options)
        if self.speeds is not None:
            self.speeds.observe(self.model, response)
        text = response.content.strip()
        if not text:
            raise SummaryRejected("the model returned an empty summary")
        return text, response.eval_count or self.estimator.text(self.model, text)

    async def summarize(self, chunks: list[str], system: str, instructions: str,
                        progress: Progress = lambda *_: None,
                        room: int | None = None, opening: Opening | None = None) -> tuple[str, int]:
        """The summary of the chunks: one call each, then merge calls until one remains;
        or, where the last turn's prompt opens with the messages they show (`opening`), one
        call that goes on from there, where that fits. `progress` hears of the start (step 0)
        and of each call done, with how long the rest should take at the model's measured speeds."""
        self.check_room()
        if opening and (done := await self._in_place_summary(system, instructions, opening, progress, room)):
            return done
        steps = len(chunks) + (1 if len(chunks) > 1 else 0)
        # what is left to read, in characters (a manual compaction of an import has
        # hundreds of chunks: estimated once, by the first chunk's tokens per character)
        left = [sum(len(c) for c in chunks[n:]) for n in range(len(chunks) + 1)] if self.speeds else []
        per_char = self.estimator.text(self.model, chunks[0]) / max(1, len(chunks[0])) if chunks and left else 0.0
        progress(0, steps, f"summarizing {len(chunks)} part(s) with {self.model}",
                 self.expected(round(per_char * left[0]) if left else 0, steps, room))
        step = 0
        texts: list[tuple[str, int]] = []
        for n, chunk in enumerate(chunks):
            texts.append(await self.call(system, instructions, chunk, _HEADER, room))
            step += 1
            progress(step, max(steps, step), f"summarized part {step} of {len(chunks)}",
                     self.expected(round(per_char * left[n + 1]) if left else 0, steps - step, room))
        while len(texts) > 1:
            lines = [(f"Part {i + 1}: {t}\n\n", self.estimator.text(self.model, t) + 4)
                     for i, (t, _) in enumerate(texts)]
            groups = chunk_lines(lines, self.budget)
            if len(groups) >= len(texts):  # each summary alone fills a call: merge pairwise
                groups = ["".join(line for line, _ in lines[i:i + 2]) for i in range(0, len(lines), 2)]
            texts = []
            for group in groups:
                texts.append(await self.call(MERGE_SYSTEM, instructions, group, _MERGE_HEADER, room))
                step += 1
                progress(step, max(steps, step), "merged summaries", None)
        return texts[0]

    async def _in_place_summary(self, system: str, instructions: str, opening: Opening, progress: Progress,
                                room: int | None) -> tuple[str, int] | None:
        """The summary of the conversation in `opening`, asked after it (None where that does
        not fit, or the server refused it as too long)."""
        request = continuation(system, instructions, IN_PLACE_BODY, _HEADER)
        found = self.in_place(request, room, opening)
        if found is None:
            log.info("a summary on its own: after the ~%d tokens of the last turn that it summarizes, the "
                     "window (%d) leaves it too little room", opening.tokens, self.window)
            return None
        progress(0, 1, f"summarizing 1 part(s) with {self.model}, the conversation read from its cache",
                 self.expected(self.estimator.text(self.model, request), 1, found[1]))
        made = await self._ask_in_place(*found)
        if made is not None:
            progress(1, 1, "summarized", 0.0)
        return made

    async def _ask_in_place(self, messages: list[Message], room: int) -> tuple[str, int] | None:
        """`_ask` for a call that goes on from the last turn; None where the server refused it
        as too long (a count too low): the turn is not gone on from again, the call goes on its own."""
        try:
            return await self._ask(messages, room)
        except ModelCallError as exc:
            if exc.code is not ErrorCode.CONTEXT_OVERFLOW:
                raise
            self.served = None
            return None

    def expected(self, tokens: int, calls: int, room: int | None = None) -> float | None:
        """Seconds `calls` calls should take reading `tokens` of transcript (and, for the
        merges, what the calls wrote) and writing summaries of about half their room each,
        at the model's measured speeds (None: not measured yet)."""
        if self.speeds is None or calls <= 0:
            return None if calls > 0 else 0.0
        written = calls * (room or self.room) // 2
        return self.speeds.expected(self.model, tokens + written, written)


def instructions_for(context: ActiveContext, extra: str = "") -> str:
    """What every summarizer is told: the goal record (what the conversation is for, decided, made, next) and any extra instructions."""
    return "\n\n".join(p for p in (goal_markers.summarizer_context(context.goals), extra) if p)
