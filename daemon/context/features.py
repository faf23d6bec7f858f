"""Text features for token estimates, and a prompt's features summed from its messages'.

A feature vector counts what costs tokens differently in every tokenizer: Latin
letters and words, other scripts, digits, symbols, newlines, other whitespace, and
one template cost per message. Every count is additive over texts joined by a
non-letter, so a prompt's vector is the sum of its parts' vectors: the prompt as
`prompt.context_messages` would build it is summed from each stored message's
cached vector (a stored message never changes), in O(active messages) with no text
re-read, and equals `prompt_features` of the built prompt exactly.
"""

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from ctxkeep.daemon.store.records import ActiveContext, MessageRecord, SessionRecord

#: Latin letters, Latin words, other letters, digits, symbols, newlines, other
#: whitespace, messages.
FEATURES = 8
Vector = tuple[float, ...]
ZERO: Vector = (0.0,) * FEATURES
#: The template cost of one message.
ONE: Vector = (0.0,) * (FEATURES - 1) + (1.0,)

_LATIN = re.compile(r"[A-Za-z]")
_LATIN_WORDS = re.compile(r"[A-Za-z]+")
_LETTERS = re.compile(r"[^\W\d_]")
_DIGITS = re.compile(r"\d")
_SPACE = re.compile(r"[^\S\n]")


def text_features(text: str) -> Vector:
    """Features of a text, without any per-message cost."""
    latin = len(_LATIN.findall(text))
    words = len(_LATIN_WORDS.findall(text))
    other = len(_LETTERS.findall(text)) - latin
    digits = len(_DIGITS.findall(text))
    newlines = text.count("\n")
    space = len(_SPACE.findall(text))
    symbols = len(text) - latin - other - digits - newlines - space
    return (float(latin), float(words), float(other), float(digits), float(symbols),
            float(newlines), float(space), 0.0)


def add(*vectors: Vector) -> Vector:
    return tuple(map(sum, zip(*vectors))) if vectors else ZERO


def scale(v: Vector, k: float) -> Vector:
    return tuple(x * k for x in v)


#: What joins two texts merged into one message ("\n\n").
JOIN = text_features("\n\n")


def prompt_features(messages: Iterable[Mapping[str, str]]) -> Vector:
    """Features of a chat prompt: every message's text plus one template cost each,
    and one more for the assistant turn the prompt opens."""
    return add(ONE, *(add(text_features(m.get("content", "")), ONE) for m in messages))


class MessageFeatures(NamedTuple):
    """A stored message's vectors: its text, and its @file blocks in full or as summaries
    (each with the blank line that joins it)."""

    content: Vector
    blocks: Vector
    summaries: Vector

    def shown(self, file_summaries: bool) -> Vector:
        """The message as `MessageRecord.prompt_content` shows it."""
        return add(self.content, self.summaries if file_summaries else self.blocks)


def message_features(m: MessageRecord) -> MessageFeatures:
    joins = scale(JOIN, len(m.files))
    return MessageFeatures(
        text_features(m.content),
        add(joins, *(text_features(f.block) for f in m.files)),
        add(joins, *(text_features(f.summary or f.block) for f in m.files)))


class FeatureCache:
    """Stored messages' features by (session, seq), least recently used out first."""

    def __init__(self, size: int = 1 << 17) -> None:
        self.size = size
        self._cached: OrderedDict[tuple[str, int], MessageFeatures] = OrderedDict()

    def of(self, session_id: str, m: MessageRecord) -> MessageFeatures:
        if m.seq < 0:  # not stored (a projection): nothing to key it by
            return message_features(m)
        key = (session_id, m.seq)
        found = self._cached.get(key)
        if found is None:
            found = self._cached[key] = message_features(m)
            if len(self._cached) > self.size:
                self._cached.popitem(last=False)
        else:
            self._cached.move_to_end(key)
        return found


def context_features(cache: FeatureCache, session: SessionRecord, system: Sequence[str],
                     context: ActiveContext, active: Sequence[MessageRecord],
                     user: MessageRecord | None = None) -> Vector:
    """`prompt_features` of the prompt `prompt.context_messages` (or, with `user`,
    `prompt.build_messages`) builds: `system` is its system text's parts. Mirrors
    `prompt.normalize`: system texts merge into one message, and consecutive messages of
    one role merge into one (joined by a blank line, one template cost)."""
    summarized = set(context.file_summaries)
    system_parts = [text_features(s) for s in system if s]
    rest: list[Vector] = []
    previous = ""
    for m in [*active, user] if user is not None else active:
        shown = cache.of(session.id, m).shown(m.seq in summarized)
        if m.role == "system":
            if shown != ZERO:  # an empty text is left out
                system_parts.append(shown)
            continue
        rest.append(add(shown, JOIN) if m.role == previous else add(shown, ONE))
        previous = m.role
    total = add(ONE, *rest)
    if system_parts:
        total = add(total, ONE, *system_parts, scale(JOIN, len(system_parts) - 1))
    return total
