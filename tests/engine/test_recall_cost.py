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
    READ_FLOOR where the bound cuts it."""
    past = "What did I tell you about the kitchen shelves and the garden and the budget?"
    slow = recalled(tmp_path, ns_per_read=50_000_000, seconds=1.0, then=past, reminding=False)  # 20 tokens/s
    *chatter, asked = slow
    assert all(e.recalled for e in slow), [e.cut for e in slow if not e.recalled]  # never cut to nothing
    assert chatter and statistics.median(len(e.recalled) for e in chatter) <= READ_FLOOR_OTHER, chatter
    assert all(len(e.recalled) <= READ_FLOOR_OTHER for e in chatter if e.cut), chatter  # its best exchange
    assert asked.cut and len(asked.recalled) >= READ_FLOOR, asked


def test_the_reading_bound_never_leaves_recall_with_nothing(tmp_path):
    """Even a model read at 20 tokens a second (a loaded CPU) gets its best passages."""
    slow = recalled(tmp_path, ns_per_read=50_000_000, seconds=1.0)
    assert slow and all(e.recalled for e in slow) and any(e.cut for e in slow)


def test_a_block_stays_after_its_message_until_the_prompt_changes_before_it(tmp_path):
    """A block follows its message and stays there in the prompts that follow: each turn
    sends the last prompt whole (its block in it) and only new text after it, so the server
    reads neither the message nor its answer again. A compaction, or recall taking the room
    of old exchanges, changes the prompt before it (the server reads it anew from there
    anyway): the blocks go then. What a kept block holds is not recalled again while it is
    there."""
    _, backend = chat(tmp_path, ns_per_read=100_000, seconds=1.0)
    answers = [sent for sent, options in backend.chats if str(sent[-1].get("content")).startswith("Turn ")]
    after_block = [(before, now) for before, now in zip(answers, answers[1:]) if BLOCK in before[-1]["content"]]
    unchanged = [(before, now) for before, now in after_block if now[:len(before) - 1] == before[:-1]]
    compacted = [(before, now) for before, now in after_block if now[:len(before) - 1] != before[:-1]]
    assert len(unchanged) >= 3 and compacted, (len(unchanged), len(compacted))
    for before, now in unchanged:
        assert now[:len(before)] == before  # the server's cache holds all of it
        kept = {line for m in now[:-1] if BLOCK in m["content"] for line in passages(m["content"])}
        assert not kept & set(passages(now[-1]["content"]))  # never twice in one prompt
    for _, now in compacted:
        assert not any(BLOCK in m["content"] for m in now[:-1])


BLOCK = "\n\n<recalled"


def passages(content: str) -> list[str]:
    """The passage lines of the block a message's content ends with (none: no block)."""
    return content.split(BLOCK, 1)[1].splitlines()[1:-1] if BLOCK in content else []


def test_where_compaction_is_the_users_own_a_block_leaves_with_its_turn(tmp_path):
    """With automatic compaction off, the user keeps the active context as it is: a block
    takes none of its room past its own turn."""
    rng = random.Random(3)
    backend = MemoryBackend(reply=lambda m: " ".join(rng.choice(["fine", "noted", "sure"]) for _ in range(20)))
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, auto_compaction=False))

    async def go() -> None:
        sid = (await app.call(requests.SessionCreate(model="qwen2.5:7b", num_ctx=8192))).session.id
        for t in range(16):
            await app.call(requests.Send(session=sid, text=f"Turn {t}: remind me of {TOPICS[t % 4]}, please."))
            await app.services.jobs.drain(30)
            if t == 7:  # the user's own compaction: the first turns leave the active context
                await app.call(requests.Compact(session=sid, tail_turns=1))
                await app.services.jobs.drain(30)
    asyncio.run(go())
    app.close()
    answers = [sent for sent, _ in backend.chats if str(sent[-1].get("content")).startswith("Turn ")]
    assert sum(BLOCK in sent[-1]["content"] for sent in answers) >= 4
    assert not any(BLOCK in m["content"] for sent in answers for m in sent[:-1])
