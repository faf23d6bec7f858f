"""Background embedding gives way while a turn starts: from the turn's prompt being built to
its first token nothing else asks the embedding model, and the passages waiting are
embedded once the first token is in (or the turn ended without one)."""

import asyncio

from ctxkeep.daemon.jobs.giving_way import GivingWay
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.retrieval.vectors import SemanticIndex
from ctxkeep.protocol import requests
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
TEXTS = ["My allotment is plot 14 by the canal.", "Our dog Biscuit hates thunder."]


def test_giving_way_is_clear_once_every_starting_turn_has_started():
    async def go() -> list[bool]:
        way = GivingWay()
        first, second = way.starting(), way.starting()
        waiting = asyncio.ensure_future(way.clear())
        seen = []
        for started in (first, first, second):  # a second call of one changes nothing
            started()
            await asyncio.sleep(0)
            seen.append(waiting.done())
        return seen
    assert asyncio.run(go()) == [False, False, True]


def test_work_handed_to_then_runs_on_a_later_loop_turn_once_no_turn_is_starting():
    async def go() -> list[list[str]]:
        way, ran = GivingWay(), []
        started = way.starting()
        way.then(lambda: ran.append("while starting"))
        await asyncio.sleep(0)
        seen = [list(ran)]
        started()
        seen.append(list(ran))  # not inside the step that gave the turn its first token
        await asyncio.sleep(0)
        seen.append(list(ran))
        way.then(lambda: ran.append("none starting"))
        await asyncio.sleep(0)
        seen.append(list(ran))
        return seen
    assert asyncio.run(go()) == [[], [], ["while starting"], ["while starting", "none starting"]]


def test_background_embedding_waits_for_a_starting_turns_first_token(tmp_path):
    backend = MemoryBackend()
    embedded: list[str] = []
    plain_embed = backend.embed

    async def embed(model: str, texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return await plain_embed(model, texts)
    backend.embed = embed  # type: ignore[method-assign]
    app = InProcess(tmp_path, backend)

    async def go() -> tuple[list[str], list[str]]:
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        backend.hold()  # the turn's first chunk waits
        await app.call(requests.Send(session=sid, text="Tell me a story."))
        await asyncio.wait_for(backend.parked.wait(), 10)
        ps = [Passage(seq=i, part=0, parts=1, role="user", created=0.0, text=t) for i, t in enumerate(TEXTS)]
        index = SemanticIndex()
        app.services.recaller.embedder.want("elsewhere", lambda: (ps, index))
        await asyncio.sleep(0.3)
        while_starting = list(embedded)
        backend.release()
        await app.services.jobs.drain(30)
        for _ in range(200):
            if index.done == len(ps):
                break
            await asyncio.sleep(0.02)
        await app.services.recaller.embedder.close()
        return while_starting, list(embedded)
    try:
        while_starting, after = asyncio.run(go())
    finally:
        app.close()
    assert not any(t in text for t in TEXTS for text in while_starting), while_starting
    assert all(any(t in text for text in after) for t in TEXTS), after
