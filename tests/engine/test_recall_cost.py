"""Recall's block is new text every turn, read whole by the model: on a slow machine it is
bounded by what the model reads in `recall_read_seconds` at its measured speed (issue 42:
on 2 CPU cores recall's ~740 tokens were half of every turn's time)."""

import asyncio
import random
import statistics

from ctxkeep.daemon.backends.protocol import ChatChunk
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.usage import measure
from ctxkeep.daemon.turns.turn_recall import READ_FLOOR, READ_FLOOR_OTHER
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from memory_backend import MemoryBackend

#: Twenty topics of two words, each come back to a few times in sixty turns: a request that
#: names one alone ("The kitchen shelves?") names what earlier turns are about (recall/gate.py).
TOPICS = ["the vegetable garden", "a bicycle trip", "the kitchen shelves", "a chess opening", "the household budget",
          "the piano lessons", "a sourdough starter", "the roof repair", "a birthday party", "the fish tank",
          "the school play", "a camping stove", "the attic window", "a wedding speech", "the car insurance",
          "a knitting pattern", "the dentist visit", "a pottery class", "the garden shed", "a jigsaw puzzle"]


def test_the_bound_is_the_models_reading_speed_times_the_setting(tmp_path):
    app = InProcess(tmp_path, MemoryBackend(), Config(embed_model="", embed_builtin=False))
    speeds = app.services.speeds
    assert speeds.reads_in("qwen2.5:7b", 1.5) is None  # not measured yet: no bound
    # an answer that read 2,000 tokens in 10 s: 200 tokens a second
    speeds.observe("qwen2.5:7b", ChatChunk(done=True, prompt_eval_count=2000, eval_count=40,
                                                    prompt_eval_duration=10 * 10**9, eval_duration=10**9))
    assert speeds.reads_in("qwen2.5:7b", 1.5) == 300
    assert speeds.reads_in("qwen2.5:7b", 0) is None  # 0: no bound
    # compaction keeps room for the block that can come, not for recall's whole share
    sid = asyncio.run(app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=8192))).session.id
    view = app.store.history.view(sid)
    bounded = measure(*view, app.services.estimator, Config(recall_read_seconds=1.5), 300)
    whole = measure(*view, app.services.estimator, Config(recall_read_seconds=1.5))
    assert bounded.reserved == 300 + bounded.allowance < whole.reserved
    assert bounded.available == whole.available + whole.reserved - bounded.reserved
    app.close()


def chat(tmp_path, ns_per_read: int, seconds: float, then: str = "",
         reminding: bool = True) -> tuple[InProcess, MemoryBackend]:
    """A 60-turn chat whose questions come back to earlier topics ("remind me of…"; not
    `reminding`: new requests, every third naming an old topic alone, "The fish tank?"), the model reading at
    1e9 / ns_per_read tokens a second; `then`, a last message."""
    rng = random.Random(5)
    backend = MemoryBackend(reply=lambda m: " ".join(rng.choice(["fine", "noted", "sure", "idea"]) for _ in range(40)))
    backend.ns_per_read = ns_per_read
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, recall_read_seconds=seconds))

    async def go() -> None:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=2048))).session.id
        for t in range(60):
            topic = rng.choice(TOPICS)
            await app.call(requests.Send(session=sid, text=f"Turn {t}: remind me of one short thing about {topic}, please." if reminding
                           else f"Turn {t}: one short thing about {topic}, please." if t % 3 else f"{topic.capitalize()}?"))
            await app.services.jobs.drain(30)
        if then:
            await app.call(requests.Send(session=sid, text=then))
    asyncio.run(go())
    app.close()
    return app, backend


def recalled(tmp_path, ns_per_read: int, seconds: float, then: str = "",
             reminding: bool = True) -> list[GenerationRecalled]:
    """The recall events over `chat`."""
    app, _ = chat(tmp_path, ns_per_read, seconds, then, reminding)
    return [e for e in app.bus.seen if isinstance(e, GenerationRecalled)]


def test_a_slow_models_recalled_block_is_what_it_reads_in_the_time_allowed(tmp_path):
    """The block stays within what the model reads in the time allowed, but never below its
    best few passages (READ_FLOOR); whenever the bound cut it, the turn's event says so and
    by how much."""
    fast = recalled(tmp_path / "fast", ns_per_read=100_000, seconds=1.0)  # 10,000 tokens/s: no bound
    slow = recalled(tmp_path / "slow", ns_per_read=5_000_000, seconds=1.0)  # 200 tokens/s
    assert fast and max(e.tokens for e in fast) > 150 and not any(e.cut for e in fast)
    assert slow and any(e.cut for e in slow)
    for e in slow:  # within the estimate's margin, or the floor's few passages (said)
        assert e.tokens <= 200 + 20 or (e.cut and len(e.recalled) <= 2 * READ_FLOOR), e
        assert bool(e.cut) == (e.found_tokens > e.tokens), e
        if e.cut:
            assert "reading bound" in e.cut and f"{e.found_tokens:,} tokens found" in e.cut


def test_past_the_bound_a_new_request_keeps_its_best_exchange_and_a_question_of_the_past_its_best_few(tmp_path):
    """A request that does not speak of the user's past (a new request on an old topic)
    gets about its best exchange: only the turns about it are recalled (recall/gate.py
    `about`), and where the bound cuts, READ_FLOOR_OTHER passages' worth, not its best few:
    every passage more is read anew each turn. A question of the user's past keeps its best
    READ_FLOOR, however far past the bound they go."""
    past = "What did I tell you about the kitchen shelves and the garden and the budget?"
    slow = recalled(tmp_path, ns_per_read=50_000_000, seconds=1.0, then=past, reminding=False)  # 20 tokens/s
    *chatter, asked = slow
    assert all(e.recalled for e in slow), [e.cut for e in slow if not e.recalled]  # never cut to nothing
    assert chatter and statistics.median(len(e.recalled) for e in chatter) <= READ_FLOOR_OTHER, chatter
    assert all(len(e.recalled) <= READ_FLOOR_OTHER for e in chatter if e.cut), chatter  # its best exchange
    # the bound allows 20 tokens; its floor keeps the best few (all found, where no more was)
    assert len(asked.recalled) >= READ_FLOOR and asked.tokens > 2 * 20, asked


def test_the_reading_bound_never_leaves_recall_with_nothing(tmp_path):
    """Even a model read at 20 tokens a second (a loaded CPU) gets its best passages."""
    slow = recalled(tmp_path, ns_per_read=50_000_000, seconds=1.0)
    assert slow and all(e.recalled for e in slow) and any(e.cut for e in slow)


def test_a_block_and_the_answer_its_predecessor_makes_the_server_read_again_share_the_bound(tmp_path):
    """A block follows its message, so the next prompt (that message without it) is the last
    one up to the block's start: the server reads the message's answer again, not the
    message. What recall makes a turn read, that and the new block, stays within the time
    allowed."""
    _, backend = chat(tmp_path, ns_per_read=5_000_000, seconds=1.0)  # 200 tokens/s
    answers = [sent for sent, options in backend.chats if str(sent[-1].get("content")).startswith("Turn ")]
    blocked = [(before, now) for before, now in zip(answers, answers[1:])
               if "\n\n<recalled" in before[-1]["content"] and "\n\n<recalled" in now[-1]["content"]
               and len(now) == len(before) + 2 and now[:len(before) - 1] == before[:-1]]  # no compaction between
    assert len(blocked) >= 5, len(blocked)
    for before, now in blocked:
        assert before[-1]["content"].startswith(now[len(before) - 1]["content"] + "\n\n<recalled")  # cached
        block = "<recalled" + now[-1]["content"].split("\n\n<recalled", 1)[1]
        again = now[len(before)]["content"]  # the answer to the message that had the block
        lines = block.count("\n") - 1  # the passages, between its opening and closing lines
        assert backend.count(block) + backend.count(again) <= 200 + 20 or lines <= 2 * READ_FLOOR, (block, again)
