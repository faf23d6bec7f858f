"""Questions asked from outside a two-person chat log, one after another (recall in the engine,
in-process, by words alone): each is searched with its own words, without the name of the
writer it asks of (retrieval/speakers.py `unnamed`) and without the question before it
(select.leans_on_last_turn `whole`)."""

import asyncio
import random

from chatter import FILLER, filler_reply
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.retrieval import select
from ctxkeep.protocol import requests
from ctxkeep.protocol.imported import ImportedMessage
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
FACT = "Caroline: I have two kids, they keep me busy every single day."
ROOM = "Caroline: This morning I repotted the plants in the living room, and it made my whole day."


def _chat_log(rng: random.Random) -> list[dict]:
    """100 lines of Caroline's and Melanie's chat, each opened with its writer's name: filler,
    the fact at line 20, and four lines about Caroline's living room."""
    out = []
    for i in range(100):
        name, role = ("Caroline", "user") if i % 2 == 0 else ("Melanie", "assistant")
        out.append({"role": role, "content": f"{name}: " + " ".join(rng.choice(FILLER) for _ in range(30))})
    out[20]["content"] = FACT
    for i in (30, 44, 58, 72):
        out[i]["content"] = ROOM
    return out


def test_a_question_about_one_writer_is_not_searched_with_the_question_before_it(tmp_path):
    """"How many kids does Caroline have?" after "What does Caroline do for a living now?" has
    one word of its own ("kids", her name aside): it is whole, and gets her words about her kids,
    not the lines about her living room that the question before it would have brought."""
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))  # by words alone

    async def go() -> str:
        reply = await app.call(requests.SessionImport(model=MODEL, num_ctx=4096, messages=[
            ImportedMessage(**m) for m in _chat_log(random.Random(4))]))
        sid = reply.session.id
        for text in ("What does Caroline do for a living now?", "How many kids does Caroline have?"):
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
        return next(m for m, _ in reversed(backend.chats) if m[-1]["content"].startswith("How many kids"))[-1]["content"]
    try:
        last = asyncio.run(go())
    finally:
        app.close()
    assert select.OPENING in last and FACT.split(": ", 1)[1] in last, last
    assert "living room" not in last, last
