"""The sizes of level 3's checkpoints (pure rules): each age's target, a new checkpoint's
room, and when the checkpoints need the room, so that they age."""

from ctxkeep.daemon.compaction.planner import AGE_SHARE, AGES
from ctxkeep.daemon.context.usage import Budget
from ctxkeep.daemon.store.context_records import Checkpoint

#: The fewest tokens a summary is given.
LEAST_SUMMARY = 48
#: A new checkpoint's summary takes at most this share of what it replaces: a summary as
#: long as its room (Gemma 3 270M writes every one to its cap) frees little and, at ~50 ms
#: a token on a CPU, costs more time than anything else a pass does.
SUMMARY_SHARE = 0.25
#: The share of the budget the checkpoints may take together before a pass ages them. Until
#: then a new checkpoint goes after the others and the prompt's start, the system message
#: through the last checkpoint, stays as the model server holds it in its cache; an aging
#: rewrites them all, so the server reads the whole prompt again. Aged at every pass they took
#: up to a quarter of it (a recent, an old and a merged one). More is not better: the budget
#: for the conversation is what the checkpoints leave, so at 0.4 passes came more often
#: (15 in 80 turns of 2,048, against 12).
CHECKPOINTS_SHARE = 0.3


def base(budget: Budget) -> int:
    """The budget without checkpoints: what the checkpoints' sizes are shares of."""
    return budget.window - budget.reply - budget.system - budget.goals - budget.reserved


def target(budget: Budget, age: str) -> int:
    """The size a checkpoint of `age` is compressed to."""
    return max(LEAST_SUMMARY, int(base(budget) * AGE_SHARE[age]))


def at_most(instructions: str, room: int) -> str:
    """A summarizer's instructions with the size its summary may take."""
    return "\n\n".join(p for p in (instructions, f"At most about {room} tokens.") if p)


def summary_room(budget: Budget, original: int) -> int:
    """The most a new checkpoint's summary of `original` tokens may take: its age's size,
    and no more than a share of what it replaces."""
    return min(target(budget, "recent"), max(LEAST_SUMMARY, int(original * SUMMARY_SHARE)))


#: Once they age, the checkpoints age on (one age a step) until, with the new one, they take
#: at most this share of the budget: every aging rewrites the prompt's start (the server reads
#: all of it again), so the next should be several checkpoints away, not the next one.
AGED_SHARE = CHECKPOINTS_SHARE / 2


def crowded(checkpoints: list[Checkpoint], new: Checkpoint, budget: Budget, share: float = CHECKPOINTS_SHARE) -> bool:
    """Whether the checkpoints, with `new` after them, would pass `share` of the budget
    (CHECKPOINTS_SHARE: then they age first, else they stay as the server's cache holds them)."""
    return new.current_tokens + sum(c.current_tokens for c in checkpoints) > base(budget) * share


def aging_frees(checkpoints: list[Checkpoint], budget: Budget) -> int:
    """About how many tokens aging each checkpoint one step would free (its size over the
    next age's target; merging the ancient ones is not counted)."""
    freed = 0
    for c in checkpoints:
        if not c.verbatim:
            age = AGES[min(AGES.index(c.age) + 1, len(AGES) - 1)]
            freed += max(0, c.current_tokens - target(budget, age))
    return freed
