"""The first two levels of automatic compaction, each what it would change now (or why
nothing): level 1 shows file references as their outlines, older tool results as their head
and tail and old images as their names; level 2 takes the less relevant half of the older
messages out of the active context. Level 3 (checkpoints) is `checkpoints.py`; running a
level and committing its change is `automatic.py`'s."""

from ctxkeep.daemon.compaction import relevance
from ctxkeep.daemon.compaction.planner import (
    RECENT_FILE_MESSAGES,
    Change,
    plan_file_summaries,
    plan_prune,
    prune_candidates,
)
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.shorten import shortened
from ctxkeep.daemon.store.records import MessageRecord, View


def file_outlines(config: Config, view: View, keep_tools: int) -> Change | str:
    """Level 1: file references to their summaries, older tool results (all but the last
    `keep_tools` exchanges) to their head and tail, old images to their names."""
    context = view.context
    image_turns = config.image_turns if view.session.vision else None
    seqs = plan_file_summaries(context, view.active, keep_tools, image_turns)
    if not seqs:
        return "no full file references unused in the last 3 messages, no long older tool results, no old images"
    return Change(list(context.seqs), [*context.file_summaries, *seqs], list(context.checkpoints),
                  f"{len(seqs)} message(s) now show their files as summaries, tool results "
                  "as their head and tail, or images as their names")


async def prune(terms: relevance.TermCache, view: View, preserved: set[int],
                vectors: relevance.PassageVectors | None = None) -> Change | str:
    """Level 2: the less relevant half of the older messages (outside `preserved`) leaves the
    active context, relevance being to the recent turns (BM25, and meaning by recall's
    vectors where its embedder has them: `vectors`)."""
    session, context, active = view
    candidates = prune_candidates(context, active, preserved)
    if len(candidates) < 2:
        return "no older messages outside the preserved ones"
    scores = await relevance.score(candidates, active[-RECENT_FILE_MESSAGES:], terms=terms,
                                   session_id=session.id, vectors=vectors)
    pruned = plan_prune(candidates, scores)
    return Change([s for s in context.seqs if s not in pruned],
                  [s for s in context.file_summaries if s not in pruned], list(context.checkpoints),
                  f"{len(pruned)} low-relevance message(s) left the active context")


def displaced(view: View, seqs: tuple[int, ...]) -> Change:
    """Level 2 for recall's room: the oldest verbatim exchanges whose room the turn's recall
    block takes leave the active context (the history keeps them, recallable word for word)."""
    context, gone = view.context, set(seqs)
    return Change([s for s in context.seqs if s not in gone], [s for s in context.file_summaries if s not in gone],
                  list(context.checkpoints), f"{len(gone)} older message(s) made room for what this message "
                  "recalls (they stay recallable word for word)")


def long_answers(view: View, user: MessageRecord | None) -> Change | str:
    """The last resort for a prompt that must fit (nothing else left to compact): the long
    answers still shown whole — the newest exchange's included, which no other level
    touches — as their head and tail ("[… N characters omitted …]" between), so that one
    long answer never leaves a session without a way forward. Undoable as any pass."""
    context = view.context
    done, pinned = set(context.file_summaries), set(context.pinned)
    seqs = [m.seq for m in view.active if m.role == "assistant" and not m.files and m.seq not in done
            and m.seq not in pinned and (user is None or m.seq != user.seq) and shortened(m.content) != m.content]
    if not seqs:
        return "no long answer left to show as its head and tail"
    return Change(list(context.seqs), [*context.file_summaries, *seqs], list(context.checkpoints),
                  f"{len(seqs)} long answer(s), the newest included, now show their head and tail")
