"""How each model's summaries have fared against the fact check (fact_check.py), and what
that says of the next try: every try makes the model write a summary, seconds to minutes on
a CPU. A model whose second tries (the missing facts named) kept failing is not asked a
second time, and one whose summaries kept failing both tries is not asked for a summary: the
source's own sentences stand in at once, as they would have after both tries. One try in
every PROBE_EVERY is made anyway, so that a model that does better again (another kind of
conversation) is asked again.

Measured (bench/realmodel_session.py, Gemma 3 270M, 2,048 window, 40 turns): each of the 8
checkpoints was asked twice, both summaries dropped the chat's numbers, and the source's
sentences stood in: 16 summaries written and thrown away.
"""

from collections import defaultdict, deque
from dataclasses import dataclass, field

#: Tries a verdict is drawn from: the last this many of one kind, all failed.
RECENT = 3
#: Of the tries a verdict would skip, every this many-th is made anyway.
PROBE_EVERY = 4


@dataclass
class Tries:
    """One kind of try of one model: the latest outcomes, and how many were skipped since."""

    outcomes: deque[bool] = field(default_factory=lambda: deque(maxlen=RECENT))
    skipped: int = 0

    def worth(self) -> bool:
        """Whether the next try is worth making: not all of the last RECENT failed, or it
        is the PROBE_EVERY-th since they did."""
        if len(self.outcomes) < RECENT or any(self.outcomes):
            return True
        self.skipped += 1
        if self.skipped >= PROBE_EVERY:
            self.skipped = 0
            return True
        return False

    def add(self, good: bool) -> None:
        self.outcomes.append(good)
        if good:
            self.skipped = 0


@dataclass
class SummaryRecord:
    """Each model's recent tries, by kind: "summary" (a checkpoint's summary kept, at the
    first try or the second), "again" (a second try that kept every fact), "aging" (a
    shortened summary about what it shortened)."""

    tries: dict[tuple[str, str], Tries] = field(default_factory=lambda: defaultdict(Tries))

    def worth(self, model: str, kind: str) -> bool:
        return self.tries[(model, kind)].worth()

    def add(self, model: str, kind: str, good: bool) -> None:
        self.tries[(model, kind)].add(good)

    def failing(self, model: str, kind: str) -> bool:
        """Whether the last RECENT tries of `kind` all failed (what a skipped try is told by)."""
        tries = self.tries.get((model, kind))
        return tries is not None and len(tries.outcomes) == RECENT and not any(tries.outcomes)

    def notes(self) -> dict[str, str]:
        """What `status` says of each model whose summaries are not asked as usual, and why."""
        out = {}
        for model in sorted({m for m, _ in self.tries}):
            if self.failing(model, "summary"):
                out[model] = (f"its last {RECENT} summaries lost what they replaced: checkpoints are made of "
                              f"the conversation's own sentences, and age to them (one summary in "
                              f"{PROBE_EVERY} is still asked)")
            elif self.failing(model, "again"):
                out[model] = (f"its last {RECENT} second tries lost facts again: a summary that drops facts is "
                              "replaced by the conversation's own sentences at once")
        return out
