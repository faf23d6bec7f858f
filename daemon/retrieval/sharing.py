"""The room a block may take shared out among the passages found: a match that stands out
first whatever its length, then the rest by score for their length, a share kept for what
stands out by meaning, and an answer's question (or a question's answer) where it fits."""

from collections.abc import Callable, Sequence

from ctxkeep.daemon.retrieval.passages import Passage

#: The fewest tokens a line takes (its time, speaker and a word): less room left ends
#: the search.
LEAST_LINE = 8


#: How much a passage's length counts against its score when the budget is shared out:
#: passages are taken by score / tokens ** DENSITY, so that one long answer that matches a
#: few words does not take the room of several short turns that match as well (0: by score
#: alone; 1: by score per token).
DENSITY = 0.5
#: The best passages weighed that way (the rest follow by score).
WEIGHED = 300


#: For a message about the user's own past, the share of recall's room kept for passages
#: that stand out by meaning (select.MEANING_STAND_OUT deviations) and that words did not find:
#: what was said in other words ("my Fitbit", asked about "health-related devices"). On
#: the dev split (48 evidence turns with the built-in e5's vectors, recall's own selection
#: over each whole history) it found 1–3 more at 1,000–2,600 tokens and as many at 700.
MEANING_SHARE = 0.15


def select(ranked: Sequence[int], passages: Sequence[Passage], budget: int, overhead: int,
           cost: Callable[[int], int], partners: Callable[[Passage], list[int]],
           score: Callable[[int], float] | None = None, near: Sequence[int] = ()) -> list[Passage]:
    """The passages `choose` takes, in the order they were said — the best first whatever
    its length where it stands out (`best`) —, and of `near` (by meaning, nearest first),
    those it leaves out, in MEANING_SHARE of the budget kept for them (what they leave of
    it goes back to the rest)."""
    with_partners = lambda pid: partners(passages[pid])
    text = lambda pid: passages[pid].text
    first = best(ranked, budget - overhead, cost, score)
    chosen = choose(ranked, budget, overhead, cost, with_partners, score, first, text)
    if any(pid not in chosen for pid in near):
        chosen = choose(ranked, budget - int(MEANING_SHARE * budget), overhead, cost, with_partners, score, first, text)
        used, taken = overhead + sum(cost(pid) for pid in chosen), {text(pid) for pid in chosen}
        for pid in [*near, *ranked]:
            if text(pid) not in taken and budget - used >= LEAST_LINE and used + cost(pid) <= budget:
                chosen.append(pid)
                taken.add(text(pid))
                used += cost(pid)
    return sorted((passages[pid] for pid in chosen), key=lambda p: (p.seq, p.part))


#: How far the best passage must score above every other to go first whatever its length
#: (`best`): half again. On the live dev split the long answers a question asked for scored
#: 1.6-2.0 times the next passage; where the top is a near tie (2.58 against 2.53, a
#: 700-token answer beside the user's short turns that matched as well), sharing out by
#: length keeps the several short turns a question that gathers facts needs.
STANDS_OUT = 1.5


def best(ranked: Sequence[int], room: int, cost: Callable[[int], int],
         score: Callable[[int], float] | None) -> int | None:
    """The passage that stands out above every other (STANDS_OUT), when it fits `room`
    alone: it is taken before the rest are shared out by length (DENSITY) or meaning's
    share is set aside, so a message whose best match is one long answer ("remind me how
    many subjects were in that study") gets that answer, not the short turns around it.
    None where no passage stands out so (those are shared out by length) or it does not fit."""
    if not ranked or score is None or cost(ranked[0]) > room:
        return None
    top = score(ranked[0])
    return ranked[0] if all(STANDS_OUT * score(pid) <= top for pid in ranked[1:WEIGHED]) else None


def choose(ranked: Sequence[int], budget: int, overhead: int, cost: Callable[[int], int],
           partners: Callable[[int], list[int]], score: Callable[[int], float] | None = None,
           first: int | None = None, same: Callable[[int], object] = lambda pid: pid) -> list[int]:
    """Passage ids best first while they fit `budget` tokens (each passage's line `cost`,
    the block's own `overhead`) — `first` before all (the caller has seen that it fits),
    then with `score`, the best WEIGHED taken by score for their length (DENSITY) —; then,
    for each chosen one in that order, its partner (an answer's question, a question's
    answer) when it fits too, unless one chosen says the same (`same`: the passage's text);
    no passage twice."""
    if score is not None:
        prices = {pid: max(1, cost(pid)) for pid in ranked[:WEIGHED]}
        ranked = sorted(prices, key=lambda pid: -score(pid) / prices[pid] ** DENSITY) + list(ranked[WEIGHED:])
    used = overhead
    chosen: dict[int, None] = {}
    if first is not None:
        chosen[first] = None
        used += cost(first)
    for pid in ranked:
        if budget - used < LEAST_LINE:
            break
        price = cost(pid)
        if pid not in chosen and used + price <= budget:
            chosen[pid] = None
            used += price
    said = {same(pid) for pid in chosen}
    for pid in [p for p in ranked if p in chosen]:
        for other in partners(pid):
            price = cost(other)
            if other not in chosen and same(other) not in said and used + price <= budget:
                chosen[other] = None
                said.add(same(other))
                used += price
    return list(chosen)
