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


def test_a_branch_at_a_message_a_retry_or_an_edit_replaced_holds_the_conversation_as_it_was(tmp_path):
    """Branching from "the version before I edited it" is the main reason to branch: the
    branch's context is the conversation as it stood when that message was current."""
    app = InProcess(tmp_path, MemoryBackend())

    async def scenario():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=8192))).session.id
        await turn(app, sid, "first question")            # 0, answered by 1
        await turn(app, sid, "second question")           # 2, answered by 3
        await app.call(requests.Regenerate(session=sid))  # 4 replaces 3
        await app.services.jobs.drain(30)
        await app.call(requests.Regenerate(session=sid))  # 5 replaces 4
        await app.services.jobs.drain(30)
        await app.call(requests.Edit(session=sid, text="second question, reworded"))  # 6 replaces 2, answered by 7
        await app.services.jobs.drain(30)
        history = app.store.history.page(sid)[0]
        assert [(m.seq, m.role, m.alternative_of) for m in history] == [
            (0, "user", -1), (1, "assistant", -1), (2, "user", -1), (3, "assistant", -1),
            (4, "assistant", 3), (5, "assistant", 4), (6, "user", 2), (7, "assistant", 5)]
        out = {}
        for at in (2, 3, 4, 5, 7):
            branch = (await app.call(requests.Branch(session=sid, at=at))).session.id
            out[at] = app.store.context.get(branch).seqs
        return out
    contexts = asyncio.run(scenario())
    app.close()
    assert contexts == {2: [0, 1, 2], 3: [0, 1, 2, 3], 4: [0, 1, 2, 4], 5: [0, 1, 2, 5], 7: [0, 1, 6, 7]}
