"""The automatic levels' pure planning: what each level would touch, and the shape of a
change. No I/O; the AutoCompactor (autocompact.py) applies what these decide."""

import math
from dataclasses import dataclass, field

from ctxkeep.daemon.context.prompt import transcript_line
from ctxkeep.daemon.store.records import ActiveContext, Checkpoint, MessageRecord

STRATEGY = {1: "file_compress", 2: "message_prune", 3: "checkpoint"}
AGES = ("recent", "old", "ancient", "merged")
#: Each age's target size, as a share of the budget without checkpoints (seed 002's
#: ~2000 / 1200 / 800 / 400 tokens of a 6,800-token budget, scaled to the window).
AGE_SHARE = {"recent": 0.15, "old": 0.09, "ancient": 0.06, "merged": 0.03}
RECENT_FILE_MESSAGES = 3


@dataclass
class Change:
    """What one level would do to the context state, and what to tell the user."""

    seqs: list[int]
    file_summaries: list[int]
    checkpoints: list[Checkpoint]
    note: str
    warnings: list[tuple[str, str]] = field(default_factory=list)


def outline_line(message: MessageRecord, file_summaries: bool) -> str:
    """A message as the summarizer reads it: its text and its files (as outlines where
    there are outlines), so a summarized message's files become part of the summary."""
    line = transcript_line(message)
    blocks = [f.summary or f.block for f in message.files if not f.error] if message.files else []
    if not blocks:
        return line
    return line + "\n\n".join(blocks) + "\n\n"


def preserved_seqs(context: ActiveContext, active: list[MessageRecord], keep_recent: int,
                   preserve_user: bool) -> set[int]:
    """Messages no automatic compaction touches: the last ones, pinned ones, user ones."""
    keep = {m.seq for m in active[-keep_recent:]} | set(context.pinned)
    if preserve_user:
        keep |= {m.seq for m in active if m.role == "user"}
    return keep


def plan_file_summaries(context: ActiveContext, active: list[MessageRecord]) -> list[int]:
    """Level 1: messages whose full @file references were not used in the last 3 messages."""
    recent = {f.path for m in active[-RECENT_FILE_MESSAGES:] for f in m.files}
    pinned, done = set(context.pinned), set(context.file_summaries)
    return [m.seq for m in active if m.seq not in pinned and m.seq not in done
            and any(f.summary and f.path not in recent for f in m.files)]


def prune_candidates(context: ActiveContext, active: list[MessageRecord],
                     preserved: set[int]) -> list[MessageRecord]:
    """Level 2: the messages that may leave the active context."""
    return [m for m in active if m.seq not in preserved and m.kind == "message"]


def plan_prune(candidates: list[MessageRecord], scores: list[float]) -> set[int]:
    """Level 2: keep the more relevant half; the rest leaves the active context."""
    # best first; among equal scores the newer message first (as a (score, index) sort)
    ranked = sorted(range(len(candidates) - 1, -1, -1), key=scores.__getitem__, reverse=True)
    keep = {candidates[i].seq for i in ranked[:math.ceil(len(candidates) / 2)]}
    return {m.seq for m in candidates if m.seq not in keep}
