"""The room follows the question: when a new message reaches into the past, recall may take
its room from the oldest verbatim exchanges of the active context (each is recallable word
for word, so nothing is lost) — each for what says more of the message than that exchange does
(`made`) —, and when it does not, recall takes nothing from them and the prompt's start stays
as the model server holds it in its cache. Pure functions."""

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxkeep.daemon.retrieval.passages import Passage, recallable
from ctxkeep.daemon.store.records import MessageRecord

#: A message reaches into the past when recall's best match outside the active context
#: scores at least this share of its best match among the movable exchanges (the older
#: verbatim turns): what it asks about is said there at least about as well.
REACH = 0.8
#: Of the conversation's verbatim tokens, the share recall never takes (the newest turns:
#: what the next answer most often needs, and what keeps a reply in the conversation).
KEPT_SHARE = 0.25
#: The last messages recall never takes the room of (the exchange the new message follows).
KEPT_MESSAGES = 2
#: A message that reaches into the past may have recall take up to this share of the
#: conversation's budget (the rest of the time, recall's cap).
REACH_SHARE = 0.65
#: A movable exchange whose best passage scores at least this share of the best match (it
#: holds about the best of what the message asks) makes room whatever else needs it: that
#: passage comes back in the block, in fewer tokens than the whole exchange, and the room
#: goes to the rest of the answer ("I just completed my first full marathon in 4h 22min"
#: beside the verbatim turn that set the target time). At 0.5 the weak matches of a chat
#: log, all about alike, made room again (pair chats at 8,192: 55.6 → 47.2 %).
STRONG = 0.9


@dataclass(frozen=True)
class Movable:
    """The oldest verbatim exchanges recall may take the room of, oldest first: each a
    question and what answered it, with their estimated tokens."""

    exchanges: tuple[tuple[tuple[int, ...], int], ...] = ()

    @property
    def seqs(self) -> set[int]:
        return {s for seqs, _ in self.exchanges for s in seqs}

    @property
    def tokens(self) -> int:
        return sum(tokens for _, tokens in self.exchanges)


NOTHING = Movable()


def movable(active: Sequence[MessageRecord], protected: set[int], cost: Callable[[MessageRecord], int]) -> Movable:
    """The exchanges before the protected messages (the last ones, pinned ones, tool
    exchanges: what compaction never moves either), oldest first, while the verbatim tokens
    left stay at least KEPT_SHARE of all of them. An exchange is a user message and every
    message after it up to the next one; one with a message recall cannot bring back (a
    tool exchange, an image, a summary) is not movable, and none after it is."""
    groups: list[list[MessageRecord]] = []
    for m in active:
        if m.role == "user" or not groups:
            groups.append([])
        groups[-1].append(m)
    total = sum(cost(m) for m in active)
    out: list[tuple[tuple[int, ...], int]] = []
    taken = 0
    for group in groups:
        if any(m.seq in protected or not recallable(m) or m.images or m.tool_calls for m in group):
            break
        tokens = sum(cost(m) for m in group)
        if total - taken - tokens < KEPT_SHARE * total:
            break
        out.append((tuple(m.seq for m in group), tokens))
        taken += tokens
    return Movable(tuple(out))


def reaches(scores: dict[int, float], passages: Sequence[Passage], moving: set[int], active: set[int],
            specific: Callable[[int], bool], about_past: bool = False) -> bool:
    """Whether the message reaches into the past: its best match outside the active context
    scores at least REACH × its best among the movable exchanges (or none is there), and
    either it is `specific` (it shares a word with the message that few passages have) or
    the message speaks of the user's past (`about_past`) and the movable exchanges' best
    scores under REACH × it: they do not say what it asks. In a chat that keeps coming back
    to one subject ("How much did I raise at all the charity events?" after three chats
    about charity events), no word of the question is rare, and the turns that answer it
    are still outside the window while older turns about something else hold its room."""
    outside = max(((s, pid) for pid, s in scores.items() if passages[pid].seq not in active), default=(0.0, -1))
    inside = max((s for pid, s in scores.items() if passages[pid].seq in moving), default=0.0)
    if outside[0] <= 0 or outside[0] < REACH * inside:
        return False
    return specific(outside[1]) or (about_past and inside < REACH * outside[0])


def fit(chosen: Sequence[Passage], cost: Callable[[Passage], int], overhead: int, room: int,
        moving: Movable) -> tuple[list[Passage], tuple[int, ...]]:
    """The block's passages and the exchanges whose room it takes: the fewest oldest movable
    exchanges that make room for the chosen passages from outside the active context and
    those of the exchanges taken (a passage of an exchange left in place is there already).
    When even all of them are not enough, the passages that fit, best first as chosen."""
    taken: list[int] = []
    freed = 0
    for k in range(len(moving.exchanges) + 1):
        gone = {s for seqs, _ in moving.exchanges[:k] for s in seqs}
        block = [p for p in chosen if p.seq not in moving.seqs or p.seq in gone]
        if overhead + sum(cost(p) for p in block) <= room + freed:
            return block, tuple(sorted(gone))
        if k < len(moving.exchanges):
            taken.extend(moving.exchanges[k][0])
            freed += moving.exchanges[k][1]
    block, used = [], overhead
    for p in chosen:
        if used + cost(p) <= room + freed:
            block.append(p)
            used += cost(p)
    return block, tuple(sorted(taken))


def bounded(moving: Movable, limit: int) -> Movable:
    """The oldest of `moving`'s exchanges that together take at most `limit` tokens."""
    out, used = [], 0
    for seqs, tokens in moving.exchanges:
        if used + tokens > limit:
            break
        out.append((seqs, tokens))
        used += tokens
    return Movable(tuple(out))


def needs(ranked: Sequence[int], score: Callable[[int], float], cost: Callable[[int], int],
          partners: Callable[[int], list[int]], overhead: int) -> Callable[[float], int]:
    """For a score, the tokens a block takes of the passages among `ranked` (best first) that
    score above it, each with its partner (the line it answers); 0 where none does. Worked
    out once per turn: each movable exchange asks it (`made`)."""
    scores: list[float] = []
    totals, counted, used = [0], set[int](), overhead
    for pid in ranked:
        for taken in (pid, *partners(pid)):
            if taken not in counted:
                counted.add(taken)
                used += cost(taken)
        scores.append(-score(pid))
        totals.append(used)
    return lambda displaced: totals[bisect.bisect_left(scores, -displaced)]


def made(moving: Movable, budget: int, matched: Callable[[tuple[int, ...]], float],
         need: Callable[[float], int], strong: float) -> int:
    """The room recall gets: `budget`, and the room of each oldest movable exchange in turn
    while what outscores that exchange (`need` of its best passage's score, `matched`) needs
    more than the room so far, or the exchange matches at least `strong` (its best passage
    then comes back in the block, in fewer tokens than the whole exchange). A recalled line
    takes the room of a verbatim turn only where it says more of what the message asks than
    that turn does: the weak matches that fill a block ("Thanks, Audrey, that means a lot."
    beside "How many children does Audrey have?") push out no recent turn."""
    room = budget
    for seqs, tokens in moving.exchanges:
        score = matched(seqs)
        if score < strong and need(score) <= room:
            break
        room += tokens
    return room
