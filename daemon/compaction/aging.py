"""Checkpoints age — recent, old, ancient, merged — each step re-compressed to that age's
size (checkpoint_sizes.py), the ancient ones merged into one; a model whose summaries lost
what they replaced (summary_record.py) does not shorten them either: a checkpoint then ages
to its own sentences that carry its facts."""

import logging
import secrets

import msgspec

from ctxkeep.daemon.compaction import fact_check, summary_check
from ctxkeep.daemon.compaction.checkpoint_sizes import at_most, target
from ctxkeep.daemon.compaction.planner import AGES
from ctxkeep.daemon.compaction.prompts import AGE_SYSTEM
from ctxkeep.daemon.compaction.summarizer import Summarizer
from ctxkeep.daemon.compaction.summary_record import RECENT, SummaryRecord
from ctxkeep.daemon.context.prompt import checkpoint_heading
from ctxkeep.daemon.context.served import Served
from ctxkeep.daemon.context.usage import Budget
from ctxkeep.daemon.store.context_records import Checkpoint

log = logging.getLogger(__name__)


def shown_in(served: Served | None, checkpoints: list[Checkpoint]) -> str:
    """Where the last turn's system message shows each of `checkpoints` as it is now, in
    words a model finds it by ("" where one is not shown so: its summary is then quoted)."""
    shown = {(c.id, c.summary): c for c in served.view.context.checkpoints} if served else {}
    found = [shown.get((c.id, c.summary)) for c in checkpoints]
    if not checkpoints or None in found:
        return ""
    headings = " and ".join(f"\u201c{checkpoint_heading(c.age, c.first_seq, c.last_seq, c.of_user)}\u201d"
                            for c in found if c is not None)
    return f"the {'summaries' if len(found) > 1 else 'summary'} under {headings} at the start of the conversation above."


async def age(checkpoints: list[Checkpoint], budget: Budget, summarizer: Summarizer, instructions: str,
              record: SummaryRecord, cost: summary_check.Cost) -> list[Checkpoint]:
    """Each existing checkpoint one age older, re-compressed to that age's size; the
    ancient ones merged into one. Verbatim checkpoints (older stores) stay as they are."""
    aged = []
    for c in checkpoints:
        if c.verbatim:
            aged.append(c)
            continue
        age = AGES[min(AGES.index(c.age) + 1, len(AGES) - 1)]
        aged.append(await _shrink(c, age, target(budget, age), summarizer, instructions, record, cost,
                                  shown=shown_in(summarizer.served, [c])))
    ancient = [c for c in aged if c.age in ("ancient", "merged") and not c.verbatim]
    if len(ancient) > 1:
        merged = Checkpoint(
            id=secrets.token_hex(4), age="merged", first_seq=min(c.first_seq for c in ancient),
            last_seq=max(c.last_seq for c in ancient), summary="\n\n".join(c.summary for c in ancient),
            original_tokens=sum(c.original_tokens for c in ancient),
            current_tokens=sum(c.current_tokens for c in ancient),
            compressions=max(c.compressions for c in ancient),
            key_decisions=sorted({d for c in ancient for d in c.key_decisions}),
            files=sorted({f for c in ancient for f in c.files}),
            next_steps=ancient[-1].next_steps, created=ancient[0].created,
            of_user=any(c.of_user for c in ancient))
        merged = await _shrink(merged, "merged", target(budget, "merged"), summarizer, instructions, record, cost,
                               force=True, shown=shown_in(summarizer.served, ancient))
        aged = [merged] + [c for c in aged if c not in ancient]
    return aged


async def _shrink(c: Checkpoint, age: str, target: int, summarizer: Summarizer, instructions: str,
                  record: SummaryRecord, cost: summary_check.Cost, force: bool = False,
                  shown: str = "") -> Checkpoint:
    """`c` as a checkpoint of `age`, its summary re-compressed to `target` tokens where it
    is larger (or `force`d); `shown`: where the last turn's system message shows it."""
    if c.current_tokens <= target and not force:
        return msgspec.structs.replace(c, age=age)
    model = summarizer.model
    # a model whose summaries lost what they replaced is not trusted to shorten one either
    if not record.failing(model, "summary") and record.worth(model, "aging"):
        text, tokens = await summarizer.call(
            AGE_SYSTEM, at_most(instructions, target), c.summary,
            "Summary to shorten:", room=target, shown=shown)
        record.add(model, "aging", on_topic := fact_check.about(c.summary, text))
    else:
        log.info("a checkpoint shortened to its sentences that carry its facts (%s's last %d summaries or "
                 "shortenings failed their check)", model, RECENT)
        on_topic = False
    if not on_topic:  # junk: the summary's own sentences instead, those with its facts first
        text, tokens = summary_check.extractive(c.summary, "", fact_check.everything(c.summary), target, cost)
    if tokens >= c.current_tokens:  # no gain: keep the longer one rather than lose detail
        return msgspec.structs.replace(c, age=age)
    return msgspec.structs.replace(c, age=age, summary=text, current_tokens=tokens,
                                   compressions=c.compressions + 1)
