"""Checkpoints that keep facts (issue 58): a summary that drops a number the user stated is
asked again once, naming it; a model that drops it again is replaced by the user's own
sentence that carries it."""

import asyncio

import pytest

from chatter import FILLER
from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
PLANTED = "Note for later: the storage unit number is 58213 and the gate code is 0417."


def summary_call(messages: list[dict]) -> bool:
    text = "\n".join(m["content"] for m in messages[-2:])
    return "summar" in text.lower() and ("Conversation to summarize" in text or "Summary to shorten" in text)


@pytest.mark.parametrize("complies", [True, False])
def test_a_checkpoint_that_drops_a_stated_number_is_asked_again_then_made_of_the_users_words(tmp_path, complies):
    asked: list[str] = []

    def reply(messages: list[dict]) -> str:
        if summary_call(messages):
            request = "\n".join(m["content"] for m in messages)
            asked.append(request)
            if complies and "Keep these exactly" in request:
                return "Summary: the storage unit is 58213, gate code 0417; then everyday chat."
            return "Summary: the user and the assistant chatted about everyday things."
        return "Sure. " + " ".join(FILLER[(len(messages) + i) % len(FILLER)] for i in range(30))
    backend = MemoryBackend(reply=reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, recall=False))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        for n in range(14):
            text = PLANTED if n == 0 else " ".join(FILLER[(n * 7 + i) % len(FILLER)] for i in range(30))
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
        return app.store.context.get(sid)
    context = asyncio.run(go())
    app.close()
    assert any("Keep these exactly" in a and "58213" in a for a in asked)  # asked again, naming what it lost
    held = "\n".join(c.summary for c in context.checkpoints)
    assert "58213" in held and "0417" in held
    if not complies:
        assert PLANTED in held  # the user's own sentence
