"""What a turn's stream produced: the answer and the thinking, streamed out in batches."""

from ctxkeep.daemon.backends.protocol import ChatChunk
from ctxkeep.daemon.events.batcher import TextBatcher
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.protocol.events import GenerationThinking, GenerationToken
from ctxkeep.protocol.tools import ToolCall


class Output:
    """The answer and thinking so far, each published in token batches as it comes; the
    final chunk (with the server's counts) once it came."""

    def __init__(self, bus: EventBus, session_id: str, generation_id: str, interval_s: float) -> None:
        self.answer: list[str] = []
        self.thinking: list[str] = []
        self.final: ChatChunk | None = None
        #: The tools the answer calls (each whole, in one chunk or several).
        self.calls: list[ToolCall] = []
        #: What the answer went on from (a continue): the answer is it and what streamed.
        self.prefill = ""
        self.tokens = TextBatcher(interval_s, lambda i, text: bus.publish(
            GenerationToken(generation_id=generation_id, index=i, text=text), session_id))
        self.thoughts = TextBatcher(interval_s, lambda i, text: bus.publish(
            GenerationThinking(generation_id=generation_id, index=i, text=text), session_id))

    def add(self, chunk: ChatChunk) -> None:
        """One streamed chunk."""
        if chunk.thinking:
            self.thinking.append(chunk.thinking)
            self.thoughts.add(chunk.thinking)
        if chunk.content:
            self.answer.append(chunk.content)
            self.tokens.add(chunk.content)
        self.calls.extend(chunk.tool_calls)
        if chunk.done:
            self.final = chunk

    def flush(self) -> None:
        """Publish what is still batched."""
        self.thoughts.flush()
        self.tokens.flush()

    @property
    def text(self) -> str:
        """The whole answer (after what it went on from, for a continue)."""
        return self.prefill + self.streamed

    @property
    def streamed(self) -> str:
        """What the model wrote in this turn."""
        return "".join(self.answer)

    @property
    def thought(self) -> str:
        return "".join(self.thinking)
