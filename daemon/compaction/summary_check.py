"""A checkpoint's summary checked before it is kept (fact_check.py): asked again once with
what it lost named, where the model's record says a second try is worth it
(summary_record.py), and replaced where it still fails by the source's own sentences that
carry what it lost."""

import logging
from collections.abc import Awaitable, Callable

from ctxkeep.daemon.compaction import fact_check
from ctxkeep.daemon.compaction.summary_record import RECENT, SummaryRecord

log = logging.getLogger(__name__)

#: A text's tokens in the prompt.
Cost = Callable[[str], int]


def extractive(source: str, text: str, verdict: fact_check.Verdict, room: int, cost: Cost) -> tuple[str, int]:
    """The source's own sentences that carry what the summary lost (fact_check.extractive)."""
    made = fact_check.extractive(source, text, verdict.missing, room, cost)
    log.info("a checkpoint made of its source's sentences: %s", verdict.why())
    return made, cost(made)


async def checked(record: SummaryRecord, model: str, source: str, text: str, tokens: int, room: int, cost: Cost,
                  again: Callable[[str], Awaitable[tuple[str, int]]], where: str = "") -> tuple[str, int]:
    """`text` (`tokens`), `model`'s summary of `source`, as it is kept: itself where it
    keeps the source's names, numbers, dates and decisions and is about it; else `again`
    with what it dropped named (unless the model's last second tries all failed too);
    failing again, the source's sentences that carry them (after the summary, where it is
    about its source). The outcome joins the model's record."""
    verdict = fact_check.check(source, text)
    if not verdict.good and record.worth(model, "again"):
        log.info("%sa checkpoint asked again: %s", where, verdict.why())
        text, tokens = await again(fact_check.asking_for(verdict.missing))
        verdict = fact_check.check(source, text)
        record.add(model, "again", verdict.good)
    elif not verdict.good:
        log.info("%sa checkpoint not asked again (%s's last %d second tries failed too): %s", where, model, RECENT,
                 verdict.why())
    record.add(model, "summary", verdict.good)
    return (text, tokens) if verdict.good else extractive(source, text, verdict, room, cost)
