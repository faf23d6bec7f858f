"""What memory brings into a turn: its best few matches from the user's other sessions (as
memory.py ranks them, by the precision rules a turn's memory follows), those of the
sessions that match best each with its partner where it fits (of the others, the side the
question asks of), within the room the window leaves; and, where it found more than it brings, why."""

from collections.abc import Callable

from ctxkeep.daemon.memory.index import MemoryIndex
from ctxkeep.daemon.memory.memory import Memory
from ctxkeep.daemon.memory.query import Query, Remembered
from ctxkeep.daemon.retrieval import sharing
from ctxkeep.daemon.store.records import SessionRecord

#: The most passages a turn's memory brings (each with its partner: a question's answer, an
#: answer's question): the best few, not the whole room.
MOST_PASSAGES = 6
#: The sessions whose best passage scores at least this share of the best bring each
#: passage with its partner; the others (a question's second subject, an older statement
#: of a fact, or a near miss) bring the passage that matched alone, and only one of the
#: side the question asks of (`asked_side`).
LEADING = 0.7


def asked_side(index: MemoryIndex, query: Query, ranked: list[tuple[int, float]]) -> tuple[list[tuple[int, float]], set[int]]:
    """Of `ranked`, what memory may bring, and the sessions that lead (LEADING). From a
    session that does not lead, a question about the user's own words ("what do I grow on
    my allotment?") takes only what the user said: the model's answer there that repeats the
    question's words ("the allotments along the canal grow all sorts") says nothing of the
    user. Measured on the dev split (bench/memory_precision.py, 4,096): 75.8 → 77.5–77.6 % of the
    added tokens from evidence sessions, the same evidence turns."""
    leading = {index.owner_of[pid] for pid, s in ranked if s >= LEADING}
    if query.asks_of is None:
        return ranked, leading
    return [(pid, s) for pid, s in ranked
            if index.owner_of[pid] in leading or index.passages[pid].role == query.asks_of], leading


async def bring(memory: Memory, session: SessionRecord, query: Query, budget: int, overhead: int,
                cost: Callable[[int, str], int]) -> tuple[list[Remembered], str]:
    """What memory brings into a turn of `session` within `budget` tokens (`cost` of a
    passage's line with its session's name; the block's own `overhead`), oldest first;
    and, where it found more than it brings, why ("" where it brings all it found)."""
    mode = memory.mode(session)
    ranked = await memory.rank(session, query, strong=True)
    index = memory.index
    if not ranked or index is None:
        return [], ""
    ranked, leading = asked_side(index, query, ranked)
    ranked = ranked[:MOST_PASSAGES]
    found = f"{len(ranked)} passage{'s' if len(ranked) != 1 else ''} of other chats matched"
    if mode != "all":
        return [], f"memory is {mode} for this session: {found}, none added (`ctxkeep set --memory all`)"
    if budget <= overhead:
        return [], f"{found}; the window left no room for them"
    score = dict(ranked)

    def name(pid: int) -> str:
        owner = index.source(pid)
        return owner.name if owner else ""
    allowed = index.candidates(session.id, memory.family(session))

    def partners(pid: int) -> list[int]:  # those memory may bring, and this session lacks
        if index.owner_of[pid] not in leading:
            return []  # a session that matched less well brings the passage that matched alone
        return [o for o in index.partners(index.passages[pid], pid)
                if allowed[o] and hash(index.passages[o].text) not in query.holds]
    chosen = sharing.choose(list(score), budget, overhead, lambda pid: cost(pid, name(pid)), partners,
                            score.__getitem__)
    out = [Remembered(o.session_id, o.name, index.passages[pid], score.get(pid, 0.0), pid)
           for pid in chosen if (o := index.source(pid)) is not None]
    left = len([pid for pid in score if pid not in set(chosen)])
    note = f"{found}; {left} did not fit in the room the window left" if left else ""
    return sorted(out, key=lambda r: (r.passage.created, r.passage.seq, r.passage.part)), note
