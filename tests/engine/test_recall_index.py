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


def test_an_index_no_longer_kept_is_freed_after_the_turn_that_drops_it_has_started(tmp_path):
    """The indexes of the sessions used last are kept; the turn of one more drops the oldest,
    which is freed once no turn is starting (freeing a large one takes milliseconds), not
    before that turn's first token."""
    app = InProcess(tmp_path, MemoryBackend(reply=filler_reply), Config(embed_model="", embed_builtin=False))
    kept = app.services.recaller.indexes

    async def go():
        sids = []
        for n in range(indexes.SESSIONS_KEPT + 1):
            sids.append((await app.call(requests.SessionCreate(model=MODEL, num_ctx=4096))).session.id)
            await app.call(requests.Send(session=sids[-1], text=f"Remember that the shed key {n} is blue."))
            await app.services.jobs.drain(30)
        oldest = kept._kept[sids[1]]
        started = app.services.generations.giving_way.starting()  # a turn starting
        await app.call(requests.Send(session=(await app.call(requests.SessionCreate(model=MODEL))).session.id,
                                     text="Where did I say the shed key was?"))
        held = [i for i in kept.released if i is oldest]
        started()
        for _ in range(100):
            if not kept.released:
                break
            await asyncio.sleep(0.01)
        return sids, held, list(kept.released)
    sids, held, after = asyncio.run(go())
    app.close()
    assert sids[1] not in kept._kept and len(held) == 1  # dropped, but held while a turn started
    assert after == []  # freed once none is


def test_a_new_sessions_index_is_made_at_its_creation_not_by_its_first_turn(tmp_path):
    """Its first turn finds the index there (making it, and dropping the oldest kept, is off
    that turn's way to the model)."""
    app = InProcess(tmp_path, MemoryBackend(reply=filler_reply), Config(embed_model="", embed_builtin=False))
    kept = app.services.recaller.indexes

    async def go() -> tuple[bool, bool]:
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        at_once = sid in kept._kept
        for _ in range(100):
            if sid in kept._kept:
                break
            await asyncio.sleep(0.01)
        return at_once, sid in kept._kept
    at_once, soon = asyncio.run(go())
    app.close()
    assert not at_once and soon  # after the reply, in the background
