"""Text features for token estimates, and a prompt's features summed from its messages'.

A feature vector counts what costs tokens differently in every tokenizer: Latin
letters and words, other scripts, digits, symbols, newlines, other whitespace, and
one template cost per message. Every count is additive over texts joined by a
non-letter, so a prompt's vector is the sum of its parts' vectors: the prompt as
`prompt.context_messages` would build it is summed from each stored message's
cached vector (a stored message never changes), in O(active messages) with no text
re-read, and equals `prompt_features` of the built prompt exactly.
"""

import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple, cast

import msgspec

from ctxkeep.daemon.context.content import short_results
from ctxkeep.daemon.context.fold import PrefixFold
from ctxkeep.daemon.context.per_message import PerMessage
from ctxkeep.daemon.context.shorten import shortened
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.tokens import FEATURES, IMAGE, ONE, ZERO, Vector, part_features, text_features, widened

__all__ = ["FEATURES", "ONE", "Vector", "ZERO", "text_features"]


def add(*vectors: Vector) -> Vector:
    """The vectors' sum. Most sums of a message's parts are of one vector and ZEROs (no
    files, images or tool calls): those cost no arithmetic."""
    some = [v for v in vectors if v is not ZERO]
    if len(some) == 2:
        return tuple(map(operator.add, *some))
    if len(some) < 2:
        return some[0] if some else ZERO
    return tuple(map(sum, zip(*some)))


def scale(v: Vector, k: float) -> Vector:
    """`v` times `k` (ZERO itself for none: a message's count of files, images, calls)."""
    return tuple(x * k for x in v) if k else ZERO


#: What joins two texts merged into one message ("\n\n").
JOIN = text_features("\n\n")


#: What chat templates wrap a tool result and each tool call in (qwen2.5's, llama3.1's are
#: alike): counted with them, so an estimate sees their cost before calibration learns it.
RESULT_WRAP = text_features("<tool_response>\n\n</tool_response>")
CALL_WRAP = text_features("<tool_call>\n\n</tool_call>")


def json_features(value: object) -> Vector:
    """Features of a value as the chat API carries it, as JSON (an answer's tool calls, a
    request's tools); none for an empty one."""
    return text_features(msgspec.json.encode(value).decode()) if value else ZERO


def prompt_features(messages: Iterable[Mapping[str, Any]]) -> Vector:
    """Features of a chat prompt: every message's text (a tool result's tool name, an
    answer's tool calls) plus one template cost each, and one more for the assistant turn
    the prompt opens."""
    return add(ONE, *(add(text_features(m.get("content", "")), text_features(m.get("tool_name", "")),
                          scale(IMAGE, len(m.get("images") or ())),
                          RESULT_WRAP if m.get("role") == "tool" else ZERO,
                          json_features(m.get("tool_calls")), scale(CALL_WRAP, len(m.get("tool_calls") or ())),
                          ONE) for m in messages))


class MessageFeatures(NamedTuple):
    """A stored message's vectors: its text, its @file blocks in full or as summaries
    (each with the blank line that joins it), and its images as the model sees them or
    as their notes."""

    content: Vector
    blocks: Vector
    summaries: Vector
    images: Vector = ZERO
    notes: Vector = ZERO
    #: A long answer's text as its head and tail (what level 1 shows of it as a last
    #: resort); None for any other message.
    short: Vector | None = None

    def text(self, file_summaries: bool) -> Vector:
        """The message's own text as shown: its head and tail, where level 1 shortened it."""
        return self.short if file_summaries and self.short is not None else self.content

    def shown(self, file_summaries: bool, images_seen: bool = False) -> Vector:
        """The message as `prompt.wire` shows it (`MessageRecord.prompt_content`, and the
        images the model sees)."""
        return add(self.text(file_summaries), self.summaries if file_summaries else self.blocks,
                   self.images if images_seen else self.notes)


def message_features(m: MessageRecord) -> MessageFeatures:
    if m.tool_results:  # one message per result, each whole or (level 1) shortened
        def results(texts: list[str]) -> Vector:
            return add(scale(ONE, len(m.tool_results) - 1), *(
                add(text_features(text), text_features(r.tool_name), RESULT_WRAP)
                for r, text in zip(m.tool_results, texts)))
        return MessageFeatures(ZERO, results([r.content for r in m.tool_results]), results(short_results(m)))
    joins = scale(JOIN, len(m.files))
    blocks = [widened(f.features) or text_features(f.block)
              for f in m.files]  # computed where the file was read, when it was
    summaries = [(widened(f.summary_features) or text_features(f.summary)) if f.summary else block
                 for f, block in zip(m.files, blocks)]
    content = add(text_features(m.content), json_features(msgspec.to_builtins(m.tool_calls)),
                  scale(CALL_WRAP, len(m.tool_calls)))
    notes = add(*(add(JOIN, text_features(i.note())) for i in m.images))
    short = None
    if m.role == "assistant" and not m.files and shortened(m.content) != m.content:
        short = add(text_features(shortened(m.content)), json_features(msgspec.to_builtins(m.tool_calls)),
                    scale(CALL_WRAP, len(m.tool_calls)))
    return MessageFeatures(content, add(joins, *blocks), add(joins, *summaries),
                           scale(IMAGE, len(m.images)), notes, short)


class FeatureCache(PerMessage[MessageFeatures]):
    """Stored messages' features by (session, seq)."""

    def __init__(self) -> None:
        super().__init__(message_features)


class Folded(NamedTuple):
    """`context_features` part-way: the non-system messages' sum (each with its template
    cost, or the join where it merges into the message before), the last role, and the
    active context's own system texts (summaries), summed, and how many."""

    rest: Vector = ZERO
    previous: str = ""
    system: Vector = ZERO
    system_count: int = 0


def fold_step(cache: FeatureCache) -> Callable[[Folded, MessageRecord, Hashable], Folded]:
    """One message's step of the fold; the key is (session id, the set of messages in
    level 1's short form, whether the model sees images)."""
    def step(state: Folded, m: MessageRecord, key: Hashable) -> Folded:
        session_id, summarized, vision = cast(tuple[str, AbstractSet[int], bool], key)
        seen = images_seen(m, summarized, vision)
        shown = cache.of(session_id, m).shown(m.seq in summarized, seen)
        if m.role == "system":
            if shown == ZERO:  # an empty text is left out
                return state
            return state._replace(system=add(state.system, shown), system_count=state.system_count + 1)
        alone = bool(m.tool_results or m.tool_calls or seen)  # as `prompt.mergeable`
        merges = m.role == state.previous and not alone
        return state._replace(rest=add(state.rest, shown, JOIN if merges else ONE),
                              previous="" if alone else m.role)
    return step


def images_seen(m: MessageRecord, summarized: AbstractSet[int], vision: bool) -> bool:
    """Whether the model sees a message's images: it has vision and level 1 did not set them
    aside."""
    return bool(m.images) and vision and m.seq not in summarized


def context_features(cache: FeatureCache, session: SessionRecord, system: Sequence[str],
                     context: ActiveContext, active: Sequence[MessageRecord],
                     user: MessageRecord | None = None,
                     fold: PrefixFold[Folded] | None = None) -> Vector:
    """`prompt_features` of the prompt `prompt.context_messages` (or, with `user`,
    `prompt.build_messages`) builds: `system` is its system text's parts. Mirrors
    `prompt.normalize`: system texts merge into one message, and consecutive messages of
    one role merge into one (joined by a blank line, one template cost). With `fold`, the
    active messages are folded on from where the session's last fold stopped."""
    key = (session.id, frozenset(context.file_summaries), session.vision)
    step = fold_step(cache)
    if fold is not None:
        state = fold.fold(session.id, key, active)
    else:
        state = Folded()
        for m in active:
            state = step(state, m, key)
    if user is not None:
        state = step(state, user, key)
    system_parts = [part_features(s) for s in system if s]
    count = len(system_parts) + state.system_count
    total = add(ONE, state.rest)
    if count:
        total = add(total, ONE, state.system, *system_parts, scale(JOIN, count - 1))
    return total


class Segmented(NamedTuple):
    """The active messages' features by budget segment (the sum of `measure`'s fold)."""

    pinned: Vector = ZERO
    files: Vector = ZERO
    summaries: Vector = ZERO
    recent: Vector = ZERO


def segment_step(cache: FeatureCache) -> Callable[[Segmented, MessageRecord, Hashable], Segmented]:
    """One message's step; the key is (session id, pinned seqs, seqs in level 1's short
    form, whether the model sees images). Images count with the files."""
    def step(state: Segmented, m: MessageRecord, key: Hashable) -> Segmented:
        session_id, pinned, summarized, vision = cast(tuple[str, AbstractSet[int], AbstractSet[int], bool], key)
        cached = cache.of(session_id, m)
        attached = add(cached.summaries if m.seq in summarized else cached.blocks,
                       cached.images if images_seen(m, summarized, vision) else cached.notes)
        text = cached.text(m.seq in summarized)
        if m.seq in pinned:
            return state._replace(pinned=add(state.pinned, text, ONE, attached))
        if m.kind == "summary":
            return state._replace(summaries=add(state.summaries, text, ONE),
                                  files=add(state.files, attached))
        return state._replace(recent=add(state.recent, text, ONE), files=add(state.files, attached))
    return step
