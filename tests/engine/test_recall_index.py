"""A session's recall index (recall/indexes.py) is whole when a turn reads it: an import is
indexed ahead of its first turn in a worker thread, and a turn sent at once waits for that,
rather than reading an index half built or building it a second time beside it."""

import asyncio
import random
import time

from chatter import FILLER, filler_reply
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.recall import indexes
from ctxkeep.daemon.retrieval import speakers
from ctxkeep.protocol import requests
from ctxkeep.protocol.imported import ImportedMessage
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


def test_a_turn_sent_while_an_import_is_indexed_reads_the_whole_index(tmp_path, monkeypatch):
    """A chat log without names opening its lines (speakers.addressees), large enough to be
    indexed in a worker thread, made slow there; the question about one writer, sent at once,
    still finds what she said, and every message is indexed once."""
    rng = random.Random(4)
    lines = []
    for i in range(indexes.INLINE_MESSAGES + 100):
        said = " ".join(rng.choice(FILLER) for _ in range(20))
        lines.append(f"Thanks, {('Melanie', 'Caroline')[i % 2]}, {said}" if i % 5 == 0 else said)
    fact = "I live in Tallinn now, we like how quiet it is."
    lines[41] = fact
    slow = speakers.Speakers.add

    def slowly(self, role, content):  # the thread takes longer than the turn waits
        time.sleep(0.002)
        slow(self, role, content)
    monkeypatch.setattr(speakers.Speakers, "add", slowly)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))

    async def go():
        sid = (await app.call(requests.SessionImport(model=MODEL, num_ctx=4096, messages=[
            ImportedMessage(role=("user", "assistant")[i % 2], content=line) for i, line in enumerate(lines)]))).session.id
        await app.call(requests.Send(session=sid, text="Where does Melanie live these days?"))
        await app.services.jobs.drain(30)
        return app.services.recaller.indexes._kept[sid]
    index = asyncio.run(go())
    app.close()
    prompt = next(m for m, _ in reversed(backend.chats) if m[-1]["content"].startswith("Where does Melanie"))
    assert fact in "\n".join(m["content"] for m in prompt)
    seqs = [p.seq for p in index.lexical.passages if p.part == 0]
    assert len(seqs) == len(set(seqs)) == len(lines) + 2  # each once: the import, the question, its answer
    assert sum(index.speakers.messages.values()) == len(lines) + 2
