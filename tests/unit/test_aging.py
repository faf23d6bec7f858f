"""Checkpoints age in one large step (planner.AGE_SHARE): recent → old is the one
re-compression before a checkpoint is merged; old → ancient only marks it for the merge,
with no model call (each call re-reads and rewrites a summary, and loses detail)."""

import asyncio

from ctxkeep.daemon.compaction.checkpoint_sizes import target
from ctxkeep.daemon.compaction.checkpoints import Checkpointer
from ctxkeep.daemon.context.usage import Budget
from ctxkeep.daemon.store.context_records import Checkpoint

BUDGET = Budget(window=4096, reply=256, system=40, goals=0, pinned=0, checkpoints=0, files=0,
                summaries=0, conversation=1000)


class Writer:
    """A summarizer that writes every summary to the size it is allowed, as a small model does."""

    #: No turn of the session its model's server holds (each call on its own).
    served = None
    model = "small"

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def call(self, system: str, instructions: str, body: str, header: str,
                   room: int | None = None, shown: str = "") -> tuple[str, int]:
        assert room is not None
        self.calls.append(room)
        return "s " * room, room


def checkpoint(n: int, age: str, tokens: int) -> Checkpoint:
    return Checkpoint(id=str(n), age=age, first_seq=10 * n, last_seq=10 * n + 9, summary="x " * tokens,
                      original_tokens=4 * tokens, current_tokens=tokens)


def aged(checkpoints: list[Checkpoint], writer: Writer) -> list[Checkpoint]:
    return asyncio.run(Checkpointer(parts=None)._age(checkpoints, BUDGET, writer, ""))  # type: ignore[arg-type]


def test_a_checkpoint_is_recompressed_once_on_its_way_to_the_merge():
    writer = Writer()
    recent = target(BUDGET, "recent")
    out = aged([checkpoint(0, "recent", recent)], writer)  # recent -> old: one call, to 40 %
    assert [c.age for c in out] == ["old"] and writer.calls == [target(BUDGET, "old")]
    assert target(BUDGET, "old") <= 0.4 * recent + 1
    out = aged(out, writer)  # old -> ancient: marked, not rewritten
    assert [c.age for c in out] == ["ancient"] and len(writer.calls) == 1
    assert out[0].summary == "s " * target(BUDGET, "old")


def test_a_checkpoint_marked_ancient_merges_into_the_merged_one_in_one_call():
    writer = Writer()
    merged = checkpoint(0, "merged", target(BUDGET, "merged"))
    out = aged([merged, checkpoint(1, "old", target(BUDGET, "old"))], writer)
    assert [c.age for c in out] == ["merged"] and writer.calls == [target(BUDGET, "merged")]
    assert (out[0].first_seq, out[0].last_seq) == (0, 19)


def test_checkpoints_age_only_when_they_need_the_room():
    """Issue 42: aging rewrites every checkpoint, so the model server reads the whole prompt
    again; a new checkpoint goes after the others, left as its cache holds them, until together
    they pass CHECKPOINTS_SHARE of the budget."""
    from ctxkeep.daemon.compaction.checkpoint_sizes import CHECKPOINTS_SHARE, base, crowded
    share = int(base(BUDGET) * CHECKPOINTS_SHARE)
    new = checkpoint(3, "recent", 100)
    assert not crowded([], new, BUDGET)
    assert not crowded([checkpoint(1, "recent", 200)], new, BUDGET)
    assert not crowded([checkpoint(1, "recent", share - 100)], new, BUDGET)
    assert crowded([checkpoint(1, "recent", share - 99)], new, BUDGET)
    assert crowded([checkpoint(1, "recent", share - 150), checkpoint(2, "old", 60)], new, BUDGET)


class Hundred:
    """Every message costs 100 tokens."""

    def message(self, model: str, content: str) -> int:
        return 100


def test_the_users_share_is_summarized_in_one_large_step():
    """Issue 42: once the user's own messages pass half the budget, the oldest are summarized
    in one step of about a third of the budget, so the next such step is turns away (at
    one or two messages a step, every few turns a pass made the model read the prompt again);
    the last messages stay."""
    from types import SimpleNamespace

    from ctxkeep.daemon.compaction.checkpoints import USER_SHARE_AFTER
    from ctxkeep.daemon.store.context_records import ActiveContext
    from ctxkeep.daemon.store.records import MessageRecord
    active = [MessageRecord(seq=i, role="user" if i % 2 == 0 else "assistant", content=f"m{i}", created=0.0)
              for i in range(20)]
    budget = Budget(window=2000, reply=0, system=0, goals=0, pinned=0, checkpoints=0, files=0, summaries=0,
                    conversation=0)
    preserved = {m.seq for m in active if m.role == "user"} | {19}  # 10 questions and the last answer
    checkpointer = Checkpointer(parts=SimpleNamespace(estimator=Hundred()))  # type: ignore[arg-type]
    users = checkpointer._user_share("m", ActiveContext(seqs=list(range(20))), active, budget, preserved, 2)
    assert [m.seq for m in users] == list(range(0, 2 * len(users), 2))  # the oldest first
    assert len(users) * 100 >= 0.3 * 2000  # from just over half
    assert (len(preserved) - len(users)) * 100 <= USER_SHARE_AFTER * 2000
    assert 18 not in {m.seq for m in users}
    assert checkpointer._user_share("m", ActiveContext(seqs=list(range(20))), active[:18], budget,
                                    {m.seq for m in active[:18] if m.role == "user"}, 2) == []  # 9 of 20: not half


def test_once_checkpoints_age_they_age_on_until_the_next_ones_have_room():
    """Every aging rewrites the prompt's start (the model server reads all of it again): one
    step a pass left them crowded again by the next checkpoint (Gemma 3 270M, 80 turns of
    2,048: 9 agings of 21 passes). Once they age, they age on in the same pass until, with the
    new one, they take at most AGED_SHARE of the budget."""
    from ctxkeep.daemon.compaction.checkpoint_sizes import AGED_SHARE, crowded
    new = checkpoint(5, "recent", 100)
    old = [checkpoint(0, "merged", target(BUDGET, "merged")), checkpoint(1, "recent", target(BUDGET, "recent")),
           checkpoint(2, "recent", 400)]
    assert crowded(old, new, BUDGET)
    once = aged(old, Writer())
    assert crowded(once, new, BUDGET, AGED_SHARE)  # one age older: crowded again soon
    writer = Writer()
    out = asyncio.run(Checkpointer(parts=None)._age_beside(new, old, BUDGET, writer, ""))  # type: ignore[arg-type]
    assert not crowded(out, new, BUDGET, AGED_SHARE)
    assert [c.age for c in out] == ["merged"] and (out[0].first_seq, out[0].last_seq) == (0, 29)
    calm = [checkpoint(0, "merged", target(BUDGET, "merged")), checkpoint(1, "recent", 300)]
    # one step that leaves room is all
    assert asyncio.run(Checkpointer(parts=None)._age_beside(new, calm, BUDGET, Writer(), "")) == \
        aged(calm, Writer())  # type: ignore[arg-type]
