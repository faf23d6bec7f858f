"""Whatever a model server sends, every event the engine publishes is valid against the
protocol (issue 39): random streams of chunks (empty ones, negative or huge durations and
counts, missing counts, thinking only, tool calls) through a real turn, each published event
encoded and decoded with the protocol's own validating decoder."""

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.backends.protocol import ChatChunk
from ctxkeep.protocol import decode_event, encode, requests
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from ctxkeep.protocol.tools import FunctionCall, ToolCall
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
NUMBER = st.one_of(st.integers(-(2**62), 2**62), st.just(0), st.just(-1))
TEXT = st.sampled_from(["", " ", "\n", "hello", "wörld ", "{\"a\": 1}"])
CHUNK = st.builds(lambda content, thinking, call: ChatChunk(
    content=content, thinking=thinking,
    tool_calls=(ToolCall(function=FunctionCall(name="lookup", arguments={"q": 1})),) if call else ()),
    TEXT, TEXT, st.booleans())
FINAL = st.builds(lambda reason, prompt, answer, total, load, read, write: ChatChunk(
    done=True, done_reason=reason, prompt_eval_count=prompt, eval_count=answer, total_duration=total,
    load_duration=load, prompt_eval_duration=read, eval_duration=write, host="memory"),
    st.sampled_from(["", "stop", "length"]), st.one_of(st.none(), NUMBER), NUMBER, NUMBER, NUMBER, NUMBER, NUMBER)


class ScriptedBackend(MemoryBackend):
    """Streams the chunks it is given."""

    script: list[ChatChunk] = []

    async def stream_chat(self, model: str, messages: Any, options: Any, extras: Any,
                          on_sent: Any = None) -> AsyncIterator[ChatChunk]:
        await self.facts(model)
        if on_sent is not None:
            on_sent()
        for chunk in self.script:
            await asyncio.sleep(0)
            yield chunk


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=st.lists(CHUNK, max_size=6), final=FINAL)
def test_every_event_is_valid_whatever_the_server_sends(chunks, final):
    root = Path(tempfile.mkdtemp(prefix="ckchunks"))
    backend = ScriptedBackend()
    backend.script = [*chunks, final]
    app = InProcess(root, backend)

    async def turn() -> str:
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        job = (await app.call(requests.Send(session=sid, text="hello"))).generation_id
        await app.services.jobs.drain(30)
        return job
    try:
        job = asyncio.run(turn())
        for event in app.bus.seen:
            assert decode_event(encode(event)) == event, event
        (end,) = [e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))
                  and e.generation_id == job]
        said = "".join(c.content + c.thinking for c in chunks).strip() or any(c.tool_calls for c in chunks)
        if not said:  # an empty answer is a clear error, never an empty "complete" answer
            assert isinstance(end, GenerationError) and "answered nothing" in end.message
    finally:
        app.close()
        shutil.rmtree(root, ignore_errors=True)
