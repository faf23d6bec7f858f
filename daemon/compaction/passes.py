"""What one automatic compaction pass is (`Pass`), how far it goes, and when a pass is
worth trying again (pure rules, apart from the levels that run them)."""

from dataclasses import dataclass, field

from ctxkeep.daemon.compaction.planner import KEEP_TOOL_EXCHANGES
from ctxkeep.daemon.context.features import ZERO, Vector
from ctxkeep.daemon.store.records import MessageRecord

#: After a pass the whole context should be at most this share of the window.
PASS_TARGET = 0.8
#: After an answer, a pass runs level 3 once the whole context passes this share of the
#: window (or the level-3 threshold of the budget): later than PASS_TARGET, so that more turns
#: come between passes (each rewrites the prompt's start: on Gemma 3 270M, 80 turns of 2,048,
#: with checkpoints aged once for several, 16 passes at 0.8 and 14 at 0.9, one run each).
#: A message that then does not fit beside the reply room is made to fit before its turn.
ANSWER_PASS_AT = 0.9
#: A pass after an answer that reached level 3 goes on (more checkpoint steps) until the
#: whole context is at most this share of the window: fewer, larger passes, so that several
#: turns fit before the next one (each pass makes the server read the prompt again, and
#: each summary call costs a model call).
AFTER_ANSWER_TARGET = 0.55
#: Extra level-3 steps a pass may take to reach PASS_TARGET.
EXTRA_CHECKPOINTS = 3
#: More level-3 steps a prompt that must fit may take once nothing is left to summarize:
#: each ages the checkpoints one age more, down to one merged summary.
AGING_STEPS = 3


#: A threshold pass that changed nothing is tried again once the context grew by this share
#: of the window, or by RETRY_MESSAGES messages (older ones have left the verbatim tail).
RETRY_GROWTH = 0.1
RETRY_MESSAGES = 4


def least_step(window: int, must_fit: bool, share: float) -> int:
    """The fewest tokens a pass's change must free: `share` of the window (config
    `compaction_min_step`) for a pass after an answer, none for a prompt that must fit.
    Each pass rewrites the prompt's start, so the model server re-reads all of it (its
    cache is lost): a few large passes cost far less than many small ones."""
    return 0 if must_fit else int(share * window)


def worth_retrying(fruitless_at: tuple[int, int] | None, total: int, messages: int, window: int) -> bool:
    """Whether a threshold pass may run again, the last one having changed nothing when the
    context held (tokens, messages) `fruitless_at` (None: it changed something, or none ran)."""
    if fruitless_at is None:
        return True
    tokens, count = fruitless_at
    return total >= tokens + RETRY_GROWTH * window or messages >= count + RETRY_MESSAGES


@dataclass
class Pass:
    """One automatic compaction pass: one snapshot, taken before its first change."""

    reason: str
    #: The last messages this pass keeps (None: keep_recent_messages). A prompt that must
    #: fit may take the recent ones too, two at a time, before it is refused.
    keep_recent: int | None = None
    #: Past levels 1-3: the context is still too large, so the user's share may be
    #: summarized below half the budget (shown as such) rather than stay over target.
    extra: bool = False
    #: The tool exchanges (the turn's own among them) kept whole; a prompt that must fit
    #: takes the older ones down to the turn's own before it is refused.
    keep_tools: int = KEEP_TOOL_EXCHANGES
    #: What the prompt carries beside its messages (the tools it offers), counted in `fits`.
    offered: Vector = ZERO
    #: The question the prompt must fit for, once everything else was done: the long
    #: answers still whole are shown as their head and tail (`early_levels.long_answers`).
    last_resort: MessageRecord | None = None
    #: Whether it makes room for a prompt about to be sent (else a threshold was crossed,
    #: and a change must free `least_step`).
    must_fit: bool = False
    #: The verbatim messages whose room recall takes (recall/room.py): level 2 moves them
    #: out of the active context instead of judging relevance.
    displace: tuple[int, ...] = ()
    snapshot_id: str = ""
    levels: list[int] = field(default_factory=list)
