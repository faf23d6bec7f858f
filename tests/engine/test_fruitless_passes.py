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
    app = InProcess(tmp_path, backend, Config(embed_model="", keep_recent_messages=200, recall=False))

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
    app = InProcess(tmp_path, backend, Config(embed_model=""))

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
    app = InProcess(tmp_path, backend, Config(embed_model=""))

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
