"""A message recall can bring nothing is known before the room its block could take is
worked out (`Recaller.ask`: the session holds nothing outside the prompt that the message
may ask of, and memory's rules leave it nothing): a fresh session's everyday request, a
follow-up. Wherever `ask` says so, recall worked out in full brings nothing either."""

import asyncio
import time

from test_memory import QUESTION, SISTER
from test_recall_gate import COMMON, ONCE

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.recall.recalled import NONE
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.protocol import requests
from inprocess import InProcess
from memory_backend import MemoryBackend
from unrelated import FOLLOW_UPS, UNRELATED

MODEL = "qwen2.5:7b"
ASKED = [*UNRELATED, *FOLLOW_UPS, QUESTION, "How is Bubbles the sourdough starter?",
         "When did I say the roof repair was booked?", "What did we say about the first week of the year?"]


def test_where_ask_finds_nothing_to_bring_recall_in_full_brings_nothing(tmp_path):
    app = InProcess(tmp_path, MemoryBackend(reply=lambda messages: "Noted, a short plan for the week."),
                    Config(embed_model="", embed_builtin=False))

    async def scenario() -> list[tuple[str, bool, bool]]:
        async def session(texts: list[str]) -> str:
            sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
            for text in texts:
                await app.call(requests.Send(session=sid, text=text))
                await app.services.jobs.drain(30)
            return sid
        await session([SISTER])  # memory's
        assert await app.services.memory.built(10)
        long = await session([ONCE.get(turn, COMMON[turn % len(COMMON)]) for turn in range(40)])
        fresh = await session([])
        recaller, seen = app.services.recaller, []
        for sid in (long, fresh):
            for text in ASKED:
                view = app.store.history.view(sid)
                user = NewMessage(role="user", content=text).record(-1, time.time())
                gated = await recaller.ask(*view, user)
                full = await recaller.recall(*view, await recaller.read(*view, user), 1500)
                seen.append((text, gated is None, full != NONE))
        return seen
    try:
        seen = asyncio.run(scenario())
    finally:
        app.close()
    assert not [text for text, nothing, brought in seen if nothing and brought]
    assert sum(nothing for _, nothing, _ in seen) > len(ASKED)  # the fresh session's everyday requests at least
    assert sum(brought for _, _, brought in seen) >= 3  # the questions about what was said
