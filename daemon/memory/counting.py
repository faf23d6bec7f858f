"""Memory's word statistics kept to what it may bring back: a deleted, private or forgotten
chat (and a copy of its words elsewhere) must not make a word rare or common either, and a
chat shared again counts again. Which passages are left out is worked out on the event
loop (cheaply, each turn); their terms are read again there for a few passages (a message
forgotten or remembered again: the next ranking counts it as it now is), in a worker thread
for more."""

import asyncio
from collections.abc import Callable

import numpy as np

from ctxkeep.daemon.memory.index import MemoryIndex
from ctxkeep.daemon.retrieval.bm25 import gone_of
from ctxkeep.daemon.retrieval.passages import Passage

#: Passages added since the last `recount` that it looks at one by one (more: all at once).
FEW_ADDED = 1000
#: Passages `recount` moves that are applied on the event loop (more: in a worker thread).
INLINE = 50


def _left_out(index: MemoryIndex, pid: int) -> bool:
    """Whether `recount` would leave this passage out (for one just added)."""
    owner = index.by_number[index.owner_of[pid]]
    return (owner is None or not index.allowed[owner.number] or index.passages[pid].seq in owner.forgotten
            or index.text_hash[pid] in index.counted.out_texts)


def recount(index: MemoryIndex) -> tuple[list[Passage], list[Passage]]:
    """The passages to leave out of the word statistics now, and those to count again:
    what memory may never bring back (a deleted, private or forgotten session's, a
    forgotten message's, and copies of their texts elsewhere). Marked at once; `apply`
    applies them."""
    counted = index.counted
    (start, changes), n = counted.at, len(index.passages)
    counted.at = (n, index.shut)
    if changes == index.shut and n - start <= FEW_ADDED and \
            not any(_left_out(index, pid) for pid in range(start, n)):
        return [], []  # (each turn's case: a few passages added, none to leave out)
    owners = np.frombuffer(index.owner_of, dtype=np.uint32)
    out = ~index.allowed[owners]
    for owner in filter(None, index.by_number):
        out[[pid for seq in owner.forgotten for pid in owner.pids.get(seq, ())]] = True
    hashes = np.frombuffer(index.text_hash, dtype=np.int64)
    if out.any():
        out |= np.isin(hashes, hashes[out])
    counted.out_texts = set(hashes[out].tolist())
    was = np.frombuffer(counted.uncounted, dtype=np.uint8) != 0
    leaving, back = np.flatnonzero(out & ~was), np.flatnonzero(was & ~out)
    for pid in leaving:
        counted.uncounted[pid] = 1
    for pid in back:
        counted.uncounted[pid] = 0
    return [index.passages[pid] for pid in leaving], [index.passages[pid] for pid in back]


def apply_now(index: MemoryIndex, leaving: list[Passage], back: list[Passage]) -> None:
    """`recount`'s passages out of the statistics and back in, at once (a few: INLINE)."""
    index.lexical.forget(gone_of(leaving))
    index.lexical.unforget(gone_of(back))


async def apply(index: MemoryIndex, leaving: list[Passage], back: list[Passage],
                current: Callable[[], MemoryIndex | None]) -> None:
    """`recount`'s passages out of the statistics and back in, their terms read again in a
    worker thread; nothing if the index was rebuilt meanwhile (`current` is another: a
    rebuild recounts its own)."""
    out, again = await asyncio.to_thread(lambda: (gone_of(leaving), gone_of(back)))
    if index is current():
        index.lexical.forget(out)
        index.lexical.unforget(again)
