"""A server of one slot (llama-cpp-python's) behind the router (backends/hosts.py): a side
request decided before an answer, but reaching the server after the answer began, would cut
that answer short; the answer waits for it instead."""

import asyncio

from ctxkeep.daemon.backends.host import Host
from ctxkeep.daemon.backends.hosts import Hosts
from ctxkeep.daemon.backends.openai_backend import OpenAIBackend
from ctxkeep.daemon.backends.protocol import ChatExtras
from openai_standin import OpenAIStandin

MODEL = "qwen2.5:7b"


class LateToSend(OpenAIBackend):
    """Its embedding requests leave a moment after they are made (as one waiting on the
    client, or on a busy event loop, does)."""

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0.2)
        return await super().embed(model, texts)


def test_an_answer_waits_for_the_side_request_already_under_way_on_a_one_slot_server():
    standin = OpenAIStandin(n_ctx=4096, slots=1, chunk_delay=0.02).start()
    backend = LateToSend("gpu1", standin.url + "/v1", 2.0, 10.0)
    hosts = Hosts([Host(backend)])

    async def go():
        await hosts.check()
        embedding = asyncio.create_task(hosts.embed(MODEL, ["what was said before"]))
        await asyncio.sleep(0)  # the embedding is under way (decided), not yet sent
        chunks = [c async for c in hosts.stream_chat(MODEL, [{"role": "user", "content": "tell me a story"}],
                                                     {"num_ctx": 4096}, ChatExtras())]
        await embedding
        await hosts.close()
        return chunks
    try:
        chunks = asyncio.run(go())
    finally:
        standin.stop()
    assert chunks[-1].done and chunks[-1].done_reason == "stop"
    assert standin.beside_streams == [] and len(standin.embeds) == 1
