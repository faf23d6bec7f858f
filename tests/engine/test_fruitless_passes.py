"""Issue 42: a threshold pass that changed nothing is not tried again on the next turn: it
waits for a reason (each pass re-reads the prompt): passes.worth_retrying."""

import asyncio

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionRequest, CompactionResult
from inprocess import InProcess
from memory_backend import MemoryBackend


def test_a_fruitless_pass_waits_for_the_context_to_grow(tmp_path):
    backend = MemoryBackend(reply=lambda messages: "Noted, thanks.")
    # everything stays within the recent messages kept verbatim: no level can change anything
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, keep_recent_messages=200, recall=False))

    async def go() -> list[int]:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=2048))).session.id
        passes = []
        for i in range(40):
            before = len([e for e in app.bus.seen if isinstance(e, CompactionRequest)])
            await app.call(requests.Send(session=sid, text=f"note {i}: the shed door sticks in wet weather"))
            await app.services.jobs.drain(30)
            passes.append(len([e for e in app.bus.seen if isinstance(e, CompactionRequest)]) - before)
        return passes
    passes = asyncio.run(go())
    app.close()
    results = [e for e in app.bus.seen if isinstance(e, CompactionResult)]
    assert results and all(r.status != "ok" for r in results)  # nothing could be compacted
    tried = [n for n, p in enumerate(passes) if p]
    assert len(tried) >= 2
    assert all(b - a >= 2 for a, b in zip(tried, tried[1:]))  # never on consecutive turns


def test_a_pass_after_an_answer_runs_only_in_a_worthwhile_step(tmp_path):
    """Issue 42: each pass rewrites the prompt's start, so the model re-reads all of it. A
    pass run because a threshold was crossed changes the context only when it frees at
    least MIN_STEP of the window (a prompt that must fit is exempt): a 45-turn chat in a
    2,048 window compacts in a few large steps, not in a hundred small ones."""
    import random

    from chatter import FILLER
    from ctxkeep.daemon.compaction.passes import least_step
    MIN_STEP = Config().compaction_min_step
    assert least_step(2048, False, MIN_STEP) == int(MIN_STEP * 2048) and least_step(2048, True, MIN_STEP) == 0
    rng = random.Random(3)
    backend = MemoryBackend(reply=lambda m: " ".join(rng.choice(FILLER) for _ in range(rng.randint(40, 160))))
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))

    async def go() -> None:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=2048))).session.id
        for _ in range(45):
            await app.call(requests.Send(session=sid, text=" ".join(rng.choice(FILLER) for _ in range(rng.randint(10, 60)))))
            await app.services.jobs.drain(30)
    asyncio.run(go())
    app.close()
    why = {e.compaction_id: e.requested_by for e in app.bus.seen if isinstance(e, CompactionRequest)}
    done = [e for e in app.bus.seen if isinstance(e, CompactionResult) and e.status == "ok"]
    after_answers = [e for e in done if why[e.compaction_id] == "auto (threshold crossed)"]
    assert after_answers and all(e.tokens_freed >= MIN_STEP * 2048 for e in after_answers)
    assert len(done) < 45  # without the rule: 106 changes, 98 tokens each on average
    # a step is judged before its summary is asked for: none is made and then thrown away
    thrown = [e for e in app.bus.seen if isinstance(e, CompactionResult) and e.level == 3
              and "would free only" in e.reason]
    assert not thrown, thrown[0]


def test_the_step_is_judged_whole_the_users_share_with_the_older_messages(tmp_path):
    """A pass that would summarize older answers and the user's earliest messages is worth
    it when the two together free the least step beside their summaries, though neither
    alone would: judged apart, a 1,024 window's chat (the user's messages kept verbatim,
    each longer than the answer) skipped such passes while the conversation grew over its
    budget and took recall's room (the real-model recall test saw a prompt of 957 with no
    recall). And it is judged before the model is asked for a summary."""
    import random
    import re

    from ctxkeep.daemon.compaction.passes import least_step
    rng = random.Random(9)
    words = ["careful", "plan", "small", "steps", "notes", "ideas", "weekly", "list", "quiet"]
    backend = MemoryBackend(reply=lambda m: " ".join(rng.choice(words) for _ in range(30)))
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))

    async def go() -> None:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=1024,
                                                     options={"num_predict": 40}))).session.id
        for t in range(30):
            text = f"Turn {t}: one short thing, please. Context: " + " ".join(rng.choice(words) for _ in range(40))
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
    asyncio.run(go())
    app.close()
    least = least_step(1024, False, Config().compaction_min_step)
    skipped = [e.reason for e in app.bus.seen if isinstance(e, CompactionResult)
               and "not worth a pass yet" in e.reason]
    assert skipped  # the rule was exercised
    for reason in skipped:  # one judgement of the whole step, and it was under the least step
        assert reason.count("not worth a pass yet") == 1, reason
        freed = re.search(r"would free ~([\d,]+) tokens", reason)
        assert freed and int(freed.group(1).replace(",", "")) < least, reason


def _chat(app: InProcess, turns: int, text) -> str:
    async def go() -> str:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=2048))).session.id
        for t in range(turns):
            await app.call(requests.Send(session=sid, text=text(t)))
            await app.services.jobs.drain(30)
        return sid
    return asyncio.run(go())


def test_a_step_too_small_is_judged_once_a_pass(tmp_path):
    """A threshold pass whose level-3 step is too small stops there: the same step tried
    again at once is judged the same (on a real model the second try had asked for the
    same summary again, 4-8 s of a CPU's time for nothing)."""
    import random

    from chatter import FILLER
    rng = random.Random(3)
    backend = MemoryBackend(reply=lambda m: " ".join(rng.choice(FILLER) for _ in range(rng.randint(35, 48))))
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))
    _chat(app, 24, lambda t: " ".join(rng.choice(FILLER) for _ in range(rng.randint(20, 45))))
    app.close()
    passes: list[list[CompactionResult]] = []
    for e in app.bus.seen:
        if isinstance(e, CompactionRequest) and e.level == 1:
            passes.append([])
        elif isinstance(e, CompactionResult) and passes:
            passes[-1].append(e)
    small = [p for p in passes if any(r.level == 3 and r.status == "skipped" for r in p)]
    assert small, "the rule was exercised"
    for p in small:  # nothing at level 3 after a step judged too small (a step before it may have been made)
        third = [r for r in p if r.level == 3]
        first_skip = next(i for i, r in enumerate(third) if r.status == "skipped")
        assert first_skip == len(third) - 1, [r.reason[:40] for r in p]


def test_a_step_judged_worth_it_is_kept_once_its_summary_is_made(tmp_path):
    """Level 3 judges its step before the model writes the summary; once it is written, the
    change is kept whenever it shrinks the context, though the estimate of the summary
    came out higher than the judgement allowed for (thrown away, the summary would have
    re-read the prompt for nothing, and the next pass would pay for it again). Other
    levels' changes still must free the least step."""
    from ctxkeep.daemon.compaction.passes import Pass
    from ctxkeep.daemon.compaction.planner import Change
    backend = MemoryBackend(reply=lambda m: "Noted: " + "the shed door sticks in wet weather. " * 3)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, auto_compaction=False))
    sid = _chat(app, 6, lambda t: f"note {t}: the shed door sticks in wet weather, and the hinge squeaks")
    runner = app.services.generations.auto.levels
    view = app.store.history.view(sid)
    small = Change(view.context.seqs[1:], [], [], "one message less")  # frees one message: under 15 %
    outcome = {}
    for judged in (False, True):
        async def checkpoint(*args, **kwargs) -> Change:
            return Change(small.seqs, [], [], small.note, judged=judged)
        runner.checkpointer.checkpoint = checkpoint  # the judgement's outcome, without a model
        asyncio.run(runner.run(view, 3, Pass("threshold crossed")))
        outcome[judged] = [e for e in app.bus.seen if isinstance(e, CompactionResult)][-1]
    app.close()
    assert outcome[False].status == "skipped" and "would free only" in outcome[False].reason
    assert outcome[True].status == "ok" and 0 < outcome[True].tokens_freed < 0.15 * 2048
