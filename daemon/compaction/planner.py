"""Compaction's pure planning: which model compacts, what a manual compaction summarizes
and keeps, what each automatic level would touch, the shape of a change, and the marker a
compaction leaves. No I/O: manual.py and automatic.py carry out what these decide."""

import math
from dataclasses import dataclass, field

import msgspec

from ctxkeep.daemon.compaction.prompts import transcript_line
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.content import prompt_content, short_results
from ctxkeep.daemon.store.context_records import ActiveContext, Checkpoint
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.protocol.tools import calls_text

STRATEGY = {1: "file_compress", 2: "message_prune", 3: "checkpoint"}
AGES = ("recent", "old", "ancient", "merged")
#: Each age's target size, as a share of the budget without checkpoints (so it scales with
#: the window). Every re-compression is a model call that re-reads
#: and rewrites a summary (seconds a call on a CPU, and detail lost each time), so a
#: checkpoint ages in one large step, recent → old at 40 % of its size; old → ancient only
#: marks it for the next merge (no call), and the ancient ones merge into one.
AGE_SHARE = {"recent": 0.15, "old": 0.06, "ancient": 0.06, "merged": 0.03}
RECENT_FILE_MESSAGES = 3
#: The last tool exchanges of a prompt (its turn's own among them) compaction leaves whole.
KEEP_TOOL_EXCHANGES = 3
#: Automatic levels in the user's words.
LEVEL_WORDS = {1: "files as summaries", 2: "older messages set aside", 3: "checkpoint"}


def compaction_model(session: SessionRecord, config: Config) -> str:
    """The model that writes a session's summaries: the session's choice, else the
    daemon's, else the session's own model."""
    return session.compaction_model or config.compaction_model or session.model


def compaction_marker(before: int, after: int, level: int = 0) -> str:
    """The log line a compaction writes: `── compacted: 82,400 → ~14,200 tokens (68,200 freed) ──`
    (with the level in words for an automatic one)."""
    how = f" ({LEVEL_WORDS[level]})" if level else ""
    return f"── compacted{how}: {before:,} → ~{after:,} tokens ({before - after:,} freed) ──"


def split_tail(active: list[MessageRecord], tail_turns: int) -> tuple[list[MessageRecord], list[MessageRecord]]:
    """(head to summarize, tail kept): the tail starts at the user message that opens
    the `tail_turns`-th turn from the end; whatever follows it (tool calls too) stays."""
    starts = [i for i, m in enumerate(active) if m.role == "user" and m.kind == "message"]
    if tail_turns == 0:
        return active, []
    if len(starts) < tail_turns:
        return [], active
    cut = starts[-tail_turns]
    return active[:cut], active[cut:]


def manual_parts(context: ActiveContext, active: list[MessageRecord], tail_turns: int
                 ) -> tuple[list[MessageRecord], list[MessageRecord]]:
    """A manual compaction's (head summarized, messages kept): all but the last
    `tail_turns` turns are summarized, pinned messages aside; the kept ones are the
    pinned (in order), then the tail."""
    older, tail = split_tail(active, tail_turns)
    pinned = with_partners(set(context.pinned), active)
    return [m for m in older if m.seq not in pinned], [m for m in older if m.seq in pinned] + tail


@dataclass
class Change:
    """What one level would do to the context state, and what to tell the user."""

    seqs: list[int]
    file_summaries: list[int]
    checkpoints: list[Checkpoint]
    note: str
    warnings: list[tuple[str, str]] = field(default_factory=list)
    #: Its step was judged worth a pass before the model was asked for its summaries: kept
    #: whenever it shrinks the context (thrown away, the calls would have re-read the prompt
    #: for nothing, and the next pass would pay for them again).
    judged: bool = False


def tool_lines(group: list[MessageRecord]) -> list[str]:
    """Each tool call of `group` answered within it as one line, as level 3 keeps it: the
    call, and the last line of what it returned ("ran `run({"cmd": "pytest"})`: 3 failed")."""
    out = []
    for m, after in zip(group, group[1:]):
        for call, result in zip(m.tool_calls, after.tool_results if m.tool_calls else ()):
            gist = next((line.strip() for line in reversed(result.content.splitlines()) if line.strip()), "(nothing)")
            out.append(f"ran `{calls_text([call])}`: {gist[:120]}")
    return out


def outline_line(message: MessageRecord, file_summaries: bool) -> str:
    """A message as the summarizer reads it: its text and its files (as outlines where
    there are outlines), so a summarized message's files become part of the summary; a tool
    message as its results' head and tail."""
    shown = msgspec.structs.replace(message, content=prompt_content(message, True)) if message.tool_results else message
    line = transcript_line(shown)
    blocks = [f.summary or f.block for f in message.files if not f.error] if message.files else []
    if not blocks:
        return line
    return line + "\n\n".join(blocks) + "\n\n"


def older_tool_messages(active: list[MessageRecord], keep_tools: int
                        ) -> tuple[list[MessageRecord], list[MessageRecord]]:
    """The context's tool messages as (older, kept whole): the last `keep_tools` - 1 are kept,
    with the turn's own (not yet in `active`) the last `keep_tools` exchanges."""
    tools = [m for m in active if m.tool_results]
    cut = max(0, len(tools) - max(0, keep_tools - 1))
    return tools[:cut], tools[cut:]


def last(active: list[MessageRecord], n: int) -> list[MessageRecord]:
    """The last `n` messages (none for 0, where `active[-0:]` would be all of them), with the
    question the first of them answers: an answer kept without it (its question summarized)
    would open the prompt as the model's turn, and the next pass would move the start of the
    prompt the server holds in its cache."""
    if n <= 0:
        return []
    start = max(0, len(active) - n)
    if start > 0 and active[start].role == "assistant" and active[start - 1].role == "user":
        start -= 1
    return active[start:]


def preserved_seqs(context: ActiveContext, active: list[MessageRecord], keep_recent: int,
                   preserve_user: bool, keep_tools: int = KEEP_TOOL_EXCHANGES) -> set[int]:
    """Messages no automatic compaction touches: the last ones, pinned ones, user ones, the
    tool exchanges that with the turn's own make its last `keep_tools`; each with the
    other half of its tool exchange."""
    keep = {m.seq for m in last(active, keep_recent)} | set(context.pinned)
    keep |= {m.seq for m in older_tool_messages(active, keep_tools)[1]}
    if preserve_user:
        keep |= {m.seq for m in active if m.role == "user"}
    return with_partners(keep, active)


def tool_pairs(active: list[MessageRecord]) -> dict[int, int]:
    """Each answer that calls tools and the tool message of their results, both ways: the
    two stay or go together (the chat templates refuse either alone)."""
    pairs: dict[int, int] = {}
    for m, after in zip(active, active[1:]):
        if m.tool_calls and after.tool_results:
            pairs[m.seq], pairs[after.seq] = after.seq, m.seq
    return pairs


def with_partners(seqs: set[int], active: list[MessageRecord]) -> set[int]:
    """`seqs` and the other half of every tool exchange one of them is half of."""
    pairs = tool_pairs(active)
    return seqs | {pairs[s] for s in seqs if s in pairs}


def old_images(active: list[MessageRecord], image_turns: int | None) -> set[int]:
    """Messages whose images `image_turns` questions or more followed (None: the model does
    not see images, so there are none to set aside)."""
    if image_turns is None:
        return set()
    out, later = set(), 0
    for m in reversed(active):
        if m.images and later >= image_turns:
            out.add(m.seq)
        later += m.role == "user" and m.kind == "message"
    return out


def plan_file_summaries(context: ActiveContext, active: list[MessageRecord],
                        keep_tools: int = KEEP_TOOL_EXCHANGES, image_turns: int | None = None) -> list[int]:
    """Level 1: messages whose full @file references were not used in the last 3 messages,
    tool messages older than the last `keep_tools` exchanges whose results are long (their
    head and tail from then on), and messages with images `image_turns` questions old (their
    names from then on)."""
    recent = {f.path for m in active[-RECENT_FILE_MESSAGES:] for f in m.files}
    pinned, done = set(context.pinned), set(context.file_summaries)
    older = older_tool_messages(active, keep_tools)[0]
    shortens = {m.seq for m in older if any(s != r.content for s, r in zip(short_results(m), m.tool_results))}
    shortens |= old_images(active, image_turns)
    return [m.seq for m in active if m.seq not in pinned and m.seq not in done
            and (m.seq in shortens or any(f.summary and f.path not in recent for f in m.files))]


def prune_candidates(context: ActiveContext, active: list[MessageRecord],
                     preserved: set[int]) -> list[MessageRecord]:
    """Level 2: the messages that may leave the active context."""
    return [m for m in active if m.seq not in preserved and m.kind == "message"]


def plan_prune(candidates: list[MessageRecord], scores: list[float]) -> set[int]:
    """Level 2: keep the more relevant half; the rest leaves the active context (a tool
    exchange whole: kept if either half is)."""
    # best first; among equal scores the newer message first (as a (score, index) sort)
    ranked = sorted(range(len(candidates) - 1, -1, -1), key=scores.__getitem__, reverse=True)
    keep = with_partners({candidates[i].seq for i in ranked[:math.ceil(len(candidates) / 2)]}, candidates)
    return {m.seq for m in candidates if m.seq not in keep}
