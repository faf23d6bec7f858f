"""The engine in-process (tests/inprocess.py) over the in-memory model backend: turns,
failures, cancels and automatic compaction, with the lifecycle invariants checked as a
property over random interleavings. No sockets, no HTTP: each example takes milliseconds."""

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.store.errors import StoreError
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import CompactionResult, GenerationError, ResponseGeneration
from inprocess import InProcess
from memory_backend import MemoryBackend
from ollama_standin import count_tokens, render

MODEL = "qwen2.5:7b"


TEXTS = st.sampled_from(["hello", "explain the plan in detail " * 8,
                         "def f(x):\n    return [x, {'k': x}]\n" * 4, "Größenordnung " * 9])


FAULTS = {
    "model_error": lambda: ModelCallError(ErrorCode.STREAM_INTERRUPTED, "cut"),
    "bug": lambda: RuntimeError("a bug in the engine"),
    "disk": lambda: StoreError("MDB_MAP_FULL: the disk is full"),
}


STEP = st.one_of(
    st.tuples(st.just("send"), TEXTS, st.sampled_from([None, *FAULTS]), st.integers(0, 6)),
    st.tuples(st.just("cancel_first")),
    st.tuples(st.just("cancel_last")),
    st.tuples(st.just("yield"), st.integers(1, 8)),
)


def terminals(app: InProcess, job_id: str) -> list:
    return [e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))
            and e.generation_id == job_id]


def check_invariants(app: InProcess, sid: str, accepted: list[str]) -> None:
    """Every accepted job ended exactly once; every question has exactly one answer
    (complete or interrupted); nothing is pending or busy; the active context holds
    only stored messages."""
    for job_id in accepted:
        assert len(terminals(app, job_id)) == 1, job_id
    history = app.store.history.page(sid)[0]
    questions = [m.seq for m in history if m.role == "user"]
    answers = sorted(m.reply_to for m in history if m.role == "assistant")
    assert answers == questions
    session = app.store.sessions.get(sid)
    assert session.pending == [] and not app.services.jobs.busy(sid)
    assert set(app.store.context.get(sid).seqs) <= {m.seq for m in history}


async def scenario(app: InProcess, steps: list[tuple]) -> tuple[str, list[str]]:
    sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
    accepted: list[str] = []
    for step in steps:
        if step[0] == "send":
            _, text, fault, at = step
            if fault:
                app.backend.fail_at(at, FAULTS[fault]())  # type: ignore[attr-defined]
            accepted.append((await app.call(requests.Send(session=sid, text=text))).generation_id)
        elif step[0] == "cancel_first":
            await app.call(requests.Cancel(session=sid))
        elif step[0] == "cancel_last":
            if accepted:
                await app.call(requests.Cancel(session=sid, generation_id=accepted[-1]))
        else:
            for _ in range(step[-1]):
                await asyncio.sleep(0)
    await app.services.jobs.drain(30)
    return sid, accepted


@settings(max_examples=int(os.environ.get("CTXKEEP_ENGINE_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=10))
def test_every_accepted_job_ends_exactly_once_whatever_happens(steps):
    root = Path(tempfile.mkdtemp(prefix="ckengine"))
    app = InProcess(root, MemoryBackend())
    try:
        sid, accepted = asyncio.run(scenario(app, steps))
        check_invariants(app, sid, accepted)
    finally:
        app.close()
        shutil.rmtree(root, ignore_errors=True)


def test_a_failed_turn_keeps_its_partial_answer_and_leaves_the_context(tmp_path):
    app = InProcess(tmp_path, MemoryBackend(reply=lambda m: "one two three four five six"))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        app.backend.fail_at(3, ModelCallError(ErrorCode.STREAM_INTERRUPTED, "cut"))
        job = (await app.call(requests.Send(session=sid, text="count"))).generation_id
        await app.services.jobs.drain(30)
        return sid, job
    sid, job = asyncio.run(go())
    (end,) = terminals(app, job)
    assert isinstance(end, GenerationError) and end.code == "stream_interrupted"
    assert end.partial == "one two three "
    stored = app.store.history.page(sid)[0][-1]
    assert stored.status == "interrupted" and stored.content == end.partial
    assert app.store.context.get(sid).seqs == []  # neither the question nor the answer joined it
    app.close()


def test_a_cancel_during_the_model_call_ends_the_turn_once(tmp_path):
    app = InProcess(tmp_path, MemoryBackend())

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        app.backend.hold()  # type: ignore[attr-defined]
        job = (await app.call(requests.Send(session=sid, text="wait"))).generation_id
        await asyncio.wait_for(app.backend.parked.wait(), 10)  # type: ignore[attr-defined]
        reply = await app.call(requests.Cancel(session=sid))
        await app.services.jobs.drain(30)
        return sid, job, reply
    sid, job, reply = asyncio.run(go())
    assert reply.cancelled and reply.generation_id == job
    (end,) = terminals(app, job)
    assert isinstance(end, GenerationError) and end.code == "cancelled"
    check_invariants(app, sid, [job])
    app.close()


def test_a_long_conversation_on_a_small_window_is_compacted_and_never_overflows(tmp_path):
    """Thirty turns of long answers in a 2,048-token window: automatic compaction keeps
    every prompt plus its num_predict inside the window, and no turn fails."""
    def reply(messages):
        if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten",
                                               "Summaries of")):
            return "Summary: the user and the assistant discussed the plan."
        return " ".join(f"detail{i}" for i in range(80))
    app = InProcess(tmp_path, MemoryBackend(reply=reply), Config(embed_builtin=False, num_ctx=2048))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        jobs = []
        for turn in range(30):
            jobs.append((await app.call(requests.Send(session=sid, text=f"step {turn} " * 20)))
                        .generation_id)
            await app.services.jobs.drain(30)
            app.services.jobs.closing = False
        return sid, jobs
    sid, jobs = asyncio.run(go())
    assert all(isinstance(terminals(app, j)[0], ResponseGeneration) for j in jobs)
    assert any(e.status == "ok" for e in app.of_type(CompactionResult))
    for messages, options in app.backend.chats:  # type: ignore[attr-defined]
        if "num_predict" in options and options["num_ctx"] == 2048:
            assert count_tokens(render(messages)) + options["num_predict"] <= options["num_ctx"]
    check_invariants(app, sid, jobs)
    app.close()


def test_active_pages_seek_and_follow_changes(tmp_path):
    """Paging through the active context (as `show --active` does) returns it whole and in
    order, and a commit between two pages is seen by the next one."""
    import msgspec

    from ctxkeep.daemon.store.records import NewMessage
    from ctxkeep.protocol import encode
    from ctxkeep.protocol.replies import HistoryReply
    app = InProcess(tmp_path, MemoryBackend())
    sid = app.store.sessions.create(name="p", model=MODEL, system="", options={}, num_ctx=8192).id
    app.store.history.append(sid, [NewMessage(role="user", content=f"m{i}") for i in range(25)], activate=range(25))
    # as after a compaction: a summary (#24 here) before the messages it kept, not in seq order
    app.store.context.update(sid, lambda c, _: setattr(c, "seqs", [24, *range(5, 24)]))

    async def pages(start: int = 0) -> list[int]:
        seen: list[int] = []
        while True:
            reply = await app.call(requests.History(session=sid, start=start, limit=10, active=True))
            reply = msgspec.json.decode(encode(reply), type=HistoryReply)  # as a client reads it
            seen += [m.seq for m in reply.messages]
            if reply.next is None:
                return seen
            if len(seen) == 10:  # a turn lands between two pages
                app.store.history.append(sid, [NewMessage(role="assistant", content="late")], activate=[0])
            start = reply.next
    assert asyncio.run(pages()) == app.store.context.get(sid).seqs == [24, *range(5, 24), 25]
    app.close()


def test_a_page_over_the_frame_cap_is_cut_short_and_points_on(tmp_path):
    """A history page whose messages would pass half the frame cap stops before the one
    that would, and `next` points at it; paging on returns every message exactly once."""
    import msgspec

    from ctxkeep.daemon.store.records import NewMessage
    from ctxkeep.protocol import encode
    from ctxkeep.protocol.replies import HistoryReply
    app = InProcess(tmp_path, MemoryBackend(), Config(embed_builtin=False, max_frame_bytes=8192))
    sid = app.store.sessions.create(name="big", model=MODEL, system="", options={}, num_ctx=8192).id
    app.store.history.append(sid, [NewMessage(role="user", content=f"{i} " + "x" * 900) for i in range(12)],
                     activate=range(12))

    async def pages(active: bool) -> list[list[int]]:
        out, start = [], 0
        while True:
            reply = await app.call(requests.History(session=sid, start=start, limit=100, active=active))
            body = encode(reply)
            assert len(body) <= 8192, len(body)
            reply = msgspec.json.decode(body, type=HistoryReply)
            out.append([m.seq for m in reply.messages])
            if reply.next is None:
                return out
            assert reply.next == out[-1][-1] + 1
            start = reply.next
    for active in (False, True):
        got = asyncio.run(pages(active))
        assert len(got) > 1 and all(got)  # cut short, never empty
        assert [seq for page in got for seq in page] == list(range(12))
    app.close()


def test_a_sessions_model_is_checked_against_what_ollama_has(tmp_path):
    """An unknown model is refused naming the installed ones (unless forced); when Ollama
    cannot be asked, the model is taken as it is and models.list says why."""
    from ctxkeep.daemon.handlers import RequestError

    class Down(MemoryBackend):
        async def installed(self, details: bool = True):
            raise ModelCallError(ErrorCode.OLLAMA_UNREACHABLE, "cannot reach Ollama")

    (tmp_path / "up").mkdir()
    (tmp_path / "down").mkdir()
    app = InProcess(tmp_path / "up", MemoryBackend())
    down = InProcess(tmp_path / "down", Down())

    async def go():
        try:
            await app.call(requests.SessionCreate(model="nosuch:1b"))
        except RequestError as exc:
            refused = exc
        assert refused.code is ErrorCode.MODEL_NOT_FOUND and "qwen2.5:7b" in refused.message
        assert (await app.call(requests.SessionCreate(model="nosuch:1b", force=True))).session.model == "nosuch:1b"
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        try:
            await app.call(requests.SetModel(session=sid, model="other:2b"))
        except RequestError as exc:
            assert exc.code is ErrorCode.MODEL_NOT_FOUND
        else:
            raise AssertionError("set_model took a model Ollama does not have")
        listed = await app.call(requests.ModelsList())
        assert listed.default_model == "llama3.2"  # the built-in default, not installed here:
        assert not [m for m in listed.models if m.default]  # so no model is marked as it
        assert (await down.call(requests.SessionCreate(model="anything:1b"))).session.model == "anything:1b"
        try:
            await down.call(requests.ModelsList())
        except RequestError as exc:
            assert exc.code is ErrorCode.OLLAMA_UNREACHABLE
    asyncio.run(go())
    app.close()
    down.close()


def test_every_accepted_pull_ends_with_one_result(tmp_path):
    from ctxkeep.daemon.handlers.pull import RUNNING
    from ctxkeep.protocol.events import ModelPullProgress, ModelPullResult
    app = InProcess(tmp_path, MemoryBackend())

    async def go():
        ok = (await app.call(requests.ModelsPull(model="new:3b"))).pull_id
        bad = (await app.call(requests.ModelsPull(model="nosuch:1b"))).pull_id
        cut = (await app.call(requests.ModelsPull(model="other:2b"))).pull_id
        (running,) = [t for t in RUNNING if t.get_name() == f"pull-{cut}"]
        running.cancel()  # as at shutdown, before it began
        mid = (await app.call(requests.ModelsPull(model="mid:1b"))).pull_id
        for _ in range(3):
            await asyncio.sleep(0)
        (running,) = [t for t in RUNNING if t.get_name() == f"pull-{mid}"]
        running.cancel()  # and half-way
        await asyncio.gather(*RUNNING, return_exceptions=True)
        return ok, bad, cut, mid
    ok, bad, cut, mid = asyncio.run(go())
    results = {e.pull_id: e for e in app.of_type(ModelPullResult)}
    assert len(app.of_type(ModelPullResult)) == 4
    assert results[mid].code == "shutting_down"
    assert any(e.pull_id == mid for e in app.of_type(ModelPullProgress))  # it had begun
    assert results[ok].status == "ok" and results[bad].status == "failed"
    assert results[cut].status == "failed" and results[cut].code == "shutting_down"
    assert any(e.pull_id == ok and e.total for e in app.of_type(ModelPullProgress))
    assert "new:3b" in app.backend.models  # type: ignore[attr-defined]
    app.close()
