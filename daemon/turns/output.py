"""What a turn's stream produced: the answer and the thinking, streamed out in batches."""

from typing import Any

from ctxkeep.protocol.events import GenerationThinking, GenerationToken
from ctxkeep.protocol.tools import FunctionCall, ToolCall
from ctxkeep.daemon.events.batcher import TextBatcher
from ctxkeep.daemon.events.bus import EventBus


class Output:
    """The answer and thinking so far, each published in token batches as it comes; the
    final chunk (with Ollama's counts) once it came."""

    def __init__(self, bus: EventBus, session_id: str, generation_id: str, interval_s: float) -> None:
        self.answer: list[str] = []
        self.thinking: list[str] = []
        self.final: Any = None
        #: The tools the answer calls (Ollama sends them whole, in one chunk or several).
        self.calls: list[ToolCall] = []
        self.tokens = TextBatcher(interval_s, lambda i, text: bus.publish(
            GenerationToken(generation_id=generation_id, index=i, text=text), session_id))
        self.thoughts = TextBatcher(interval_s, lambda i, text: bus.publish(
            GenerationThinking(generation_id=generation_id, index=i, text=text), session_id))

    def add(self, chunk: Any) -> None:
        """One streamed chunk."""
        if chunk.message.thinking:
            self.thinking.append(chunk.message.thinking)
            self.thoughts.add(chunk.message.thinking)
        if chunk.message.content:
            self.answer.append(chunk.message.content)
            self.tokens.add(chunk.message.content)
        for call in chunk.message.tool_calls or ():
            self.calls.append(ToolCall(function=FunctionCall(
                name=call.function.name, arguments=dict(call.function.arguments or {}))))
        if chunk.done:
            self.final = chunk

    def flush(self) -> None:
        """Publish what is still batched."""
        self.thoughts.flush()
        self.tokens.flush()

    @property
    def text(self) -> str:
        return "".join(self.answer)

    @property
    def thought(self) -> str:
        return "".join(self.thinking)
