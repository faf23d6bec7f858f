"""A follow-up recalled alone leaves unsaid what it follows up: recall brings the opening
of the sitting it was said in (the user's first message after a pause), where it fits."""

import asyncio
import random

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
OPENING = "[2023/05/20 (Sat) 10:00] I'm looking to upgrade my camera flash. Which ones work with my Sony A7R IV?"
FOLLOW_UP = "I'll go with the Godox V1. Is there a sturdy pouch that fits it?"
FILLER = ["What should I cook tonight with rice and beans?", "Any tips for a calmer morning routine?",
          "How do I keep basil alive on a windowsill?", "Suggest a short stretch for after a long walk.",
          "What is a good board game for four people?", "How long should bread dough rise?"]


def recalled_for(tmp_path, question: str) -> list[str]:
    """A sitting that opens with the camera and goes on with the Godox, forty turns of other
    sittings, a day apart each, then `question`: the texts recalled for it."""
    rng = random.Random(5)
    backend = MemoryBackend(reply=lambda messages: " ".join(rng.choice(["sure", "try this", "a good plan", "noted"])
                                                            for _ in range(40)))
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))

    async def scenario() -> list[str]:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id

        async def ask(text: str) -> list[str]:
            accepted = await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
            return [p.text for e in app.bus.seen if isinstance(e, GenerationRecalled)
                    and e.generation_id == accepted.generation_id for p in e.recalled]
        await ask(OPENING)
        await ask(FOLLOW_UP)
        for turn in range(40):
            day = f"[2023/06/{1 + turn // 2:02d} (Thu) {9 + 3 * (turn % 2):02d}:00] " if turn % 2 == 0 else ""
            await ask(day + FILLER[turn % len(FILLER)])
        return await ask(question)
    try:
        return asyncio.run(scenario())
    finally:
        app.close()


def test_a_recalled_follow_up_brings_the_message_that_opened_its_sitting(tmp_path):
    got = recalled_for(tmp_path, "[2023/07/01 (Sat) 09:00] Which pouch did I want for my Godox?")
    assert FOLLOW_UP in got, got
    assert OPENING in got, got  # the Sony A7R IV, said only there

