"""What a turn and a request do off the event loop (tests/inprocess.py, the in-memory model
backend): commits in the writer thread, only the new messages built."""

import asyncio

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionResult
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


def test_a_turn_is_two_synced_commits_both_off_the_event_loop(tmp_path):
    """The question (before `accepted`) and the answer with all it changed: two commits
    a turn, both by the writer thread; the event loop never waits for the disk. (Without
    embeddings: the embedding cache is written in the background, in commits of its own.)"""
    app = InProcess(tmp_path, MemoryBackend(), Config(embed_model="", embed_builtin=False))

    async def turn(sid: str) -> None:
        await app.call(requests.Send(session=sid, text="and then?"))
        await app.services.jobs.drain(30)
        app.services.jobs.closing = False

    async def go() -> tuple[int, int]:
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        await turn(sid)  # the first turn may record what /api/show says of the model
        commits, by_writer = app.store.commits, app.store.env.writer.commits
        await turn(sid)
        return app.store.commits - commits, app.store.env.writer.commits - by_writer
    assert asyncio.run(go()) == (2, 2)
    app.close()


def test_an_append_reaches_the_writer_thread_before_the_event_loop_runs_again(tmp_path):
    """A turn starts its question's commit from the transport's callback, the moment the
    request is out: the writer thread has it then, not a loop iteration later (while the
    loop is busy with the model's answer)."""
    import time

    from ctxkeep.daemon.store.records import NewMessage
    app = InProcess(tmp_path, MemoryBackend())

    async def go() -> int:
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        commits = app.store.env.writer.commits
        stored = app.store.history.append_async(sid, [NewMessage(role="user", content="hi")], pending=True)
        deadline = time.monotonic() + 10
        while app.store.env.writer.commits == commits and time.monotonic() < deadline:
            time.sleep(0.001)  # the event loop does not run meanwhile
        made = app.store.env.writer.commits - commits
        await stored
        return made
    assert asyncio.run(go()) == 1
    app.close()


def test_a_turn_builds_only_its_new_messages(tmp_path):
    """Prompts and their features are folded on from the session's previous turn
    (context/fold.py): turn N builds the two messages turn N-1 added, not the whole
    context again."""
    app = InProcess(tmp_path, MemoryBackend())

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        for i in range(6):
            await app.call(requests.Send(session=sid, text=f"question {i}"))
            await app.services.jobs.drain(30)
        return sid
    sid = asyncio.run(go())
    assert len(app.store.context.get(sid).seqs) == 12  # nothing was compacted
    prompts = app.services.generations.preparer.prompts.folded
    assert prompts.steps == 2 * 5  # turns 2..6 each fold the question and answer before them
    assert prompts.resumed == 4  # turn 2 folds from the start (turn 1's context was empty)
    assert app.services.estimator.folded.resumed >= 4
    app.close()


def test_requests_that_write_commit_off_the_event_loop(tmp_path):
    """Every commit a request makes (sessions, settings, pins, goals, snapshots, turns,
    manual and automatic compactions) runs in the store's writer thread: the event loop
    never waits for the disk."""
    import threading

    from ctxkeep.protocol.goals import Goals

    def reply(messages) -> str:  # long answers, short summaries
        asked = messages[-1]["content"]
        if asked.startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            return "Summary: the plan."
        return " ".join(f"detail{i}" for i in range(80))
    app = InProcess(tmp_path, MemoryBackend(reply=reply), Config(embed_builtin=False, compaction_min_step=0))  # a pass each turn
    committed_in: list[str] = []
    real_write = app.store.env.write

    def watched(fn):
        committed_in.append(threading.current_thread().name)
        return real_write(fn)
    app.store.env.write = watched  # type: ignore[method-assign]

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, name="w"))).session.id
        await app.call(requests.SessionRename(session=sid, name="w2"))
        await app.call(requests.SetSystem(session=sid, system="Be brief."))
        await app.call(requests.SetModel(session=sid, num_ctx=4096))
        await app.call(requests.Send(session=sid, text="hello"))
        await app.services.jobs.drain(30)
        await app.call(requests.Pin(session=sid, seq=0))
        await app.call(requests.GoalsSet(session=sid, goals=Goals(goal="ship it")))
        snap = (await app.call(requests.SnapshotCreate(session=sid))).snapshot
        await app.call(requests.SnapshotRestore(session=sid, snapshot_id=snap.id))
        await app.call(requests.SnapshotDelete(session=sid, snapshot_id=snap.id))
        await app.call(requests.SetModel(session=sid, thresholds=[0.001, 0.002, 0.003]))
        for i in range(6):  # long answers: automatic compactions after each turn
            await app.call(requests.Send(session=sid, text=f"question {i}"))
            await app.services.jobs.drain(30)
        await app.call(requests.Compact(session=sid, tail_turns=1))
        await app.services.jobs.drain(30)
        assert [e.status for e in app.of_type(CompactionResult)].count("ok") >= 2  # auto + manual
        await app.call(requests.SessionDelete(session=sid))
    asyncio.run(go())
    assert len(committed_in) >= 20
    assert all(name.startswith("ctxkeep-store-writer") for name in committed_in), committed_in
    app.close()
