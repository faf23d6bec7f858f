"""The asyncio client against the real daemon."""

import asyncio

import pytest

from ctxkeep.clients import AsyncClient, CtxkeepError
from ctxkeep.protocol.events import GenerationToken, ResponseGeneration


def test_async_client_turn_and_concurrent_requests(daemon, standin):
    standin.script("alpha beta gamma")

    async def scenario():
        async with AsyncClient(daemon.control, daemon.events) as c:
            greeting = await c.subscribe()
            assert greeting.status.pid == daemon.proc.pid
            pongs = await asyncio.gather(*(c.ping() for _ in range(20)))
            assert len({p.id for p in pongs}) == 20
            s = (await c.create_session(model="qwen2.5:7b")).session
            gen = (await c.send(s.id, "hi")).generation_id
            text = []
            async for _, event in c.events():
                if getattr(event, "generation_id", None) != gen:
                    continue
                if isinstance(event, GenerationToken):
                    text.append(event.text)
                if isinstance(event, ResponseGeneration):
                    break
            assert "".join(text) == "alpha beta gamma"
            with pytest.raises(CtxkeepError) as err:
                await c.session("missing")
            assert err.value.code == "unknown_session"
    asyncio.run(scenario())
