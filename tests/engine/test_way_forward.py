"""From any state a session can reach, some user action makes the next turn possible (issue
41): the next short question is answered at once, or after a compaction, or at the latest
with the window set back to what the session started with. A hypothesis property over
random programs of long and short messages, long answers, smaller windows, manual
compactions, undos, pins and regenerates, in-process."""

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
STEP = st.one_of(
    st.tuples(st.just("send"), st.integers(1, 600)),          # words in the message
    st.tuples(st.just("answer"), st.integers(1, 2500)),       # words in the next answer
    st.tuples(st.just("window"), st.sampled_from([1024, 2048, 4096])),
    st.tuples(st.just("compact")), st.tuples(st.just("undo")), st.tuples(st.just("pin")),
    st.tuples(st.just("regenerate")),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_from_any_reachable_state_the_next_short_question_is_answered(steps):
    root = Path(tempfile.mkdtemp(prefix="ckway"))
    answers: list[int] = []
    backend = MemoryBackend(reply=lambda m: " ".join(f"w{i}" for i in range(answers.pop() if answers else 5)))
    app = InProcess(root, backend)

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=4096))).session.id
        for step in steps:
            try:
                if step[0] == "send":
                    await app.call(requests.Send(session=sid, text=" ".join(["word"] * step[1])))
                elif step[0] == "answer":
                    answers.append(step[1])
                elif step[0] == "window":
                    await app.call(requests.SetModel(session=sid, num_ctx=step[1]))
                elif step[0] == "compact":
                    await app.call(requests.Compact(session=sid))
                elif step[0] == "undo":
                    await app.call(requests.SnapshotRestore(session=sid))
                elif step[0] == "pin":
                    last = app.store.sessions.get(sid).next_seq - 1
                    if last >= 0:
                        await app.call(requests.Pin(session=sid, seq=last))
                else:
                    await app.call(requests.Regenerate(session=sid))
            except RequestError:
                pass  # refused as it says (busy, nothing to undo, ...): the program goes on
            await app.services.jobs.drain(30)
        answers.clear()
        ways = [[], [requests.Compact(session=sid)], [requests.SetModel(session=sid, num_ctx=4096)]]
        ends = []
        for way in ways:  # the next question at once; else after each way forward in turn
            for action in way:
                try:
                    await app.call(action)
                except RequestError:
                    pass
                await app.services.jobs.drain(30)
            job = (await app.call(requests.Send(session=sid, text="And now, briefly?"))).generation_id
            await app.services.jobs.drain(30)
            ends.append(next(e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))
                             and e.generation_id == job))
            if isinstance(ends[-1], ResponseGeneration):
                break
        return ends
    try:
        ends = asyncio.run(go())
        assert isinstance(ends[-1], ResponseGeneration), (steps, ends)
        # a refusal says what to do, and what it says works
        assert all("num-ctx" in e.message or "compact" in e.message for e in ends[:-1]), ends
    finally:
        app.close()
        shutil.rmtree(root, ignore_errors=True)


WORDS = ["river", "garden", "kitchen", "walked", "slowly", "bright", "autumn", "trees", "friends", "plans"]


def message(n: int, shift: int = 0) -> str:
    """`n` words (two tokens each by the stand-in's count)."""
    return " ".join(WORDS[(i * 7 + shift) % len(WORDS)] for i in range(n))


def answered_in_2048(app: InProcess, texts: list[str]) -> str:
    """Each text sent in turn to a new session with a 2,048 window; asserts every one was
    answered; the session's id."""
    async def go() -> tuple[str, list[str]]:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        gids = []
        for text in texts:
            gids.append((await app.call(requests.Send(session=sid, text=text))).generation_id)
            await app.services.jobs.drain(30)
        return sid, gids
    sid, gids = asyncio.run(go())
    ends = {e.generation_id: e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))}
    assert all(isinstance(ends[g], ResponseGeneration) for g in gids), [ends[g] for g in gids]
    return sid


def test_a_message_that_fits_alone_is_answered_when_the_newest_exchange_is_summarized(tmp_path):
    """Issue 41, in a 2,048 window: after a ~900-token message and a ~500-token answer, a
    ~1,250-token message fits only without them. The newest exchange goes into the summary
    (it stays in history) rather than the message be refused."""
    long_answer = " ".join(["Here is a long answer about the river and the garden."] * 40)
    app = InProcess(tmp_path, MemoryBackend(reply=lambda m: "A short summary of what was said."
                                            if "summar" in m[0]["content"].lower() else long_answer))
    try:
        sid = answered_in_2048(app, ["Hello there, how are you?", message(450), message(620)])
        _, context, active = app.store.history.view(sid)
        seqs = [m.seq for m in active]
        assert seqs[-2:] == [4, 5] and {0, 1, 2}.isdisjoint(seqs) and context.checkpoints  # the rest: a summary
    finally:
        app.close()


def test_long_summaries_age_down_to_one_merged_summary_rather_than_a_refusal(tmp_path):
    """Issue 41, as Gemma 3 270M did it in a 2,048 window: summaries as long as their room
    allows leave too little beside a ~1,250-token message; the summaries age (old, ancient,
    merged) until it fits, and it is answered."""
    rambling = " ".join(["The talk was about rivers, gardens and the plans for winter."] * 60)
    app = InProcess(tmp_path, MemoryBackend(reply=lambda m: rambling))
    try:
        sid = answered_in_2048(app, ["Hello there, how are you?", message(400, 1), message(450, 2), message(620, 3)])
        _, context, _ = app.store.history.view(sid)
        assert [c.age for c in context.checkpoints][0] in ("ancient", "merged")
    finally:
        app.close()
