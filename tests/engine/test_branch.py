"""session.branch in-process (issue 30): a branch's next prompt is the one its source would
have sent at that point, compactions before and after it included; the branch shares
nothing mutable with its source; a point that is not there is refused by name."""

import asyncio

import pytest

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import SessionCreated
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
WORDS = " ".join(f"word{i}" for i in range(120))


async def turn(app: InProcess, sid: str, text: str) -> None:
    await app.call(requests.Send(session=sid, text=text))
    await app.services.jobs.drain(30)


async def last_seq(app: InProcess, sid: str) -> int:
    return app.store.sessions.get(sid).next_seq - 1


def test_a_branch_sends_the_prompt_its_source_sent_at_that_point(tmp_path):
    app = InProcess(tmp_path, MemoryBackend())

    async def scenario():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=8192))).session.id
        for i in range(4):
            await turn(app, sid, f"question {i}: {WORDS}")
        await app.call(requests.Compact(session=sid, tail_turns=1))  # before the point
        await app.services.jobs.drain(30)
        await app.call(requests.Pin(session=sid, seq=await last_seq(app, sid)))
        await turn(app, sid, "question 4")
        point = await last_seq(app, sid)
        await turn(app, sid, "what did we say first?")
        sent_then = app.backend.chats[-1][0]
        for i in range(5, 8):
            await turn(app, sid, f"question {i}: {WORDS}")
        await app.call(requests.Compact(session=sid, tail_turns=1))  # after it
        await app.services.jobs.drain(30)
        source_before = app.store.history.page(sid, 0, 1000)[0]

        branch = (await app.call(requests.Branch(session=sid, at=point))).session
        assert (branch.branched_from, branch.branched_at) == (sid, point)
        assert branch.message_count == point + 1 and branch.compactions == 1
        assert branch.name.endswith("(branch)")
        assert app.of_type(SessionCreated)[-1].session.id == branch.id
        await turn(app, branch.id, "what did we say first?")
        assert app.backend.chats[-1][0] == sent_then
        assert app.store.history.page(sid, 0, 1000)[0] == source_before  # the source as it was
        return sid, branch.id
    sid, bid = asyncio.run(scenario())
    # nothing shared: the source's deletion leaves the branch whole, and search finds it
    asyncio.run(app.call(requests.SessionDelete(session=sid)))
    assert app.store.history.page(bid, 0, 3)[0][0].content.startswith("question 0")
    assert app.store.search.find("word7", session_id=bid)
    app.close()


def test_a_branch_point_that_is_not_there_is_refused(tmp_path):
    app = InProcess(tmp_path, MemoryBackend())

    async def scenario():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        with pytest.raises(RequestError, match="no messages yet") as empty:
            await app.call(requests.Branch(session=sid))
        assert empty.value.code is ErrorCode.INVALID_ARGUMENT
        await turn(app, sid, "hello")
        with pytest.raises(RequestError, match="#0 to #1"):
            await app.call(requests.Branch(session=sid, at=5))
        whole = (await app.call(requests.Branch(session=sid, name="mine"))).session
        assert (whole.name, whole.branched_at, whole.message_count) == ("mine", 1, 2)
        with pytest.raises(Exception, match="exists already"):
            await app.call(requests.Branch(session=sid, name="mine"))
    asyncio.run(scenario())
    app.close()


def test_a_branch_copies_the_file_references_up_to_its_point(tmp_path):
    from ctxkeep.daemon.store.records import Attachment, NewMessage
    from ctxkeep.daemon.store.store import Store
    store = Store.open(tmp_path)
    s = store.sessions.create(name="src", model=MODEL, system="", options={}, num_ctx=8192)
    attached = [Attachment(path=f"{name}.py", mode="full", block="x", real_path=f"/p/{name}.py")
                for name in ("a", "b")]
    store.history.append(s.id, [NewMessage(role="user", content="look at @a.py", files=attached[:1]),
                                NewMessage(role="assistant", content="ok", reply_to=0),
                                NewMessage(role="user", content="and @b.py", files=attached[1:])],
                         activate=range(3))
    branch = store.branches.branch(s.id, 1)
    assert [r.path for r in store.history.file_refs(branch.id)] == ["a.py"]
    assert [r.path for r in store.history.file_refs(s.id)] == ["a.py", "b.py"]
    store.close()
