"""When a pass after an answer runs level 3 (compaction/automatic.py): once the context
passes ANSWER_PASS_AT of the window, or the budget's level-3 threshold. Each pass rewrites
the prompt's start, so the model server reads all that follows again; at 80 % of the
window the passes came every two or three turns of a 2,048 window."""

from ctxkeep.daemon.compaction.automatic import AutoCompactor
from ctxkeep.daemon.compaction.passes import ANSWER_PASS_AT, PASS_TARGET, Pass
from ctxkeep.daemon.context.usage import Budget
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View

WINDOW = 2048
SESSION = SessionRecord(id="s", name="s", model="m", num_ctx=WINDOW, created=0, updated=0)


class Fixed(AutoCompactor):
    """A compactor whose context is `total` tokens, of which `conversation` in the budget."""

    def __init__(self, total: int, conversation: int) -> None:
        self.fixed = total
        self.conversation = conversation

    def total(self, view: View) -> int:
        return self.fixed

    def budget(self, view: View) -> Budget:
        return Budget(window=WINDOW, reply=96, system=0, goals=0, pinned=0, checkpoints=0, files=0, summaries=0,
                      conversation=self.conversation)

    def thresholds(self, session: SessionRecord) -> list[float]:
        return [0.5, 0.65, 0.8]

    def fits(self, view: View, user: MessageRecord, offered: object = None) -> bool:
        return True


VIEW = View(SESSION, ActiveContext(), [])
USER = MessageRecord(seq=9, role="user", content="next", created=0)


def test_after_an_answer_level_3_waits_for_the_window_not_the_pass_target():
    below_threshold = int(0.7 * (WINDOW - 96))  # the budget's fill under level 3's 80 %
    between = int((PASS_TARGET + ANSWER_PASS_AT) / 2 * WINDOW)
    assert not Fixed(between, below_threshold).needed(3, Pass("auto"), None, VIEW)
    assert Fixed(int(ANSWER_PASS_AT * WINDOW) + 1, below_threshold).needed(3, Pass("auto"), None, VIEW)
    assert Fixed(between, int(0.85 * (WINDOW - 96))).needed(3, Pass("auto"), None, VIEW)  # the threshold


def test_a_prompt_made_to_fit_still_goes_down_to_the_pass_target():
    between = int((PASS_TARGET + ANSWER_PASS_AT) / 2 * WINDOW)
    started = Pass("before the turn")
    started.levels.append(3)  # it changed something: on until PASS_TARGET
    assert Fixed(between, 0).needed(3, started, USER, VIEW)
    assert not Fixed(int(PASS_TARGET * WINDOW) - 1, 0).needed(3, started, USER, VIEW)
