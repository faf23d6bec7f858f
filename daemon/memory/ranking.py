"""How memory ranks its passages for a query (a pure function over its index): by words,
and by meaning where the query has a vector, fused as recall fuses them (who is asked of,
newer a little higher, the span of time asked about lifted), then, for a turn's memory,
narrowed by precision.py's rules to what is about the message."""

import numpy as np

from ctxkeep.daemon.memory import precision
from ctxkeep.daemon.memory.index import MemoryIndex, time_span
from ctxkeep.daemon.memory.query import Query
from ctxkeep.daemon.retrieval import select, when
from ctxkeep.daemon.retrieval.lexical import terms

#: A passage must score at least this share of the best to come back: memory fills only
#: with what matches well, not with the whole room it may have.
FLOOR = 0.3


def ranked(index: MemoryIndex, query: Query, allowed: np.ndarray, limit: int,
           strong: bool) -> list[tuple[int, float]]:
    """(passage id, score relative to the best) of the passages `allowed` marks, best first,
    those below FLOOR left out, copies of what the asking session holds or of a better hit
    too, near copies (select.distinct) as well. `strong`: by precision.py's rules."""
    allowed = allowed & (index.holding(query.own) > 0)  # the message's own words must point there
    found = [index.lexical.rank(query.terms, (), limit, allowed)]
    if query.vector is not None and index.semantic.ids:
        found.append(index.semantic.rank(query.vector, lambda pid: not allowed[pid], limit))
    if strong and not precision.strong(index, query, found):
        return []
    ps = index.passages
    oldest, newest = time_span([ps[pid].created for r in found for pid, _ in r])
    scores = select.lifted(select.fused(*found, favored=lambda pid: ps[pid].role == query.asks_of,
                                        newer=lambda pid: (ps[pid].created - oldest) / (newest - oldest)),
                           ps, query.span, when.LIFT)
    if strong:
        scores = precision.statements_first(ps, scores)
    # not a copy of what this session (or a better hit) holds
    kept = select.unrepeated(sorted(scores, key=lambda pid: (-scores[pid], -pid)), lambda pid: ps[pid].text, query.holds)
    if strong:
        kept = precision.about_it(index, query, found, kept)
    kept = select.distinct(kept, lambda pid: frozenset(terms(ps[pid].text)))
    best = scores[kept[0]] if kept else 0.0
    if strong:
        kept = precision.best_sessions(index, kept, scores, best)
    return [(pid, scores[pid] / best) for pid in kept if scores[pid] >= FLOOR * best]
