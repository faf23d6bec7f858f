"""A live chat in the engine, as the recall tests hold one: the daemon's services in-process
on a store of their own, a model that writes summaries of realistic size, messages sent one
by one with compaction running, and the prompt a question was asked with."""

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from inprocess import InProcess
from memory_backend import MemoryBackend

T = TypeVar("T")

MODEL = "qwen2.5:7b"
TOPICS = ["the bakery on the corner", "a bicycle repair", "the new bus timetable", "tomato seedlings",
          "a jazz record", "the leaking tap", "a chess opening", "the library card", "a hiking boot",
          "the village fair", "a sourdough starter", "the broken umbrella"]


def run(backend: MemoryBackend, config: Config, go: Callable[[InProcess], Awaitable[T]]) -> T:
    """`go` against the daemon's services in-process, on a store of its own."""
    app = InProcess(Path(tempfile.mkdtemp(prefix="cklive")), backend, config)
    try:
        return asyncio.run(go(app))
    finally:
        app.close()


def summarizer(messages: list[dict]) -> str | None:
    """A summary of realistic size (a quarter of the sentences it is given), or None for a turn."""
    request = messages[-1]["content"]
    if not request.startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
        return None
    source = request.split("\n\n", 1)[-1] if "conversation above" not in request else \
        "\n".join(m["content"] for m in messages[:-1] if m["role"] != "system")
    sentences = [s for s in source.replace("\n", ". ").split(". ") if s.strip()]
    return ". ".join(sentences[::4]) or "Summary: everyday talk."


def prompt_after(texts: list[str], question: str, reply: Callable[[list[dict]], str], window: int = 2048) -> str:
    """The text of the prompt `question` was asked with, after `texts` were sent one by one
    in a session of `window` tokens, recall by words only."""
    backend = MemoryBackend(reply=reply)

    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=window))).session.id
        for text in [*texts, question]:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)

    run(backend, Config(embed_model="", embed_builtin=False), go)
    prompt = next(m for m, _ in reversed(backend.chats) if m[-1]["content"].startswith(question))
    return "\n".join(m["content"] for m in prompt)
