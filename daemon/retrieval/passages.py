"""What recall can bring back: passages of stored messages, each pointing to its message.

A message of the conversation (said by the user or the model, complete) is one passage up
to WHOLE_CHARS (most turns of a chat: a turn comes back whole, its words around the fact a
question needs included); a longer one is cut into passages of about PASSAGE_CHARS at
paragraph, line or sentence ends, so that what a question needs comes back without the rest
of a very long answer.
Summaries, interrupted answers and system texts are not recalled (the summary stands for
what is recalled; the others were never the conversation), nor ctxkeepd's own words in a
message (own_words.py).
"""

import re
from dataclasses import dataclass

from ctxkeep.daemon.retrieval.own_words import without_own_words
from ctxkeep.daemon.store.records import MessageRecord

#: A message up to this long is one passage (about 1,000 tokens of prose).
WHOLE_CHARS = 4000
#: The passages of a longer one: about 250 tokens of prose each.
PASSAGE_CHARS = 1000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Passage:
    """A piece of a message: `part` of `parts` (a whole message is part 0 of 1)."""

    seq: int
    part: int
    parts: int
    role: str
    #: When it was said: when its message was stored, or the time the stamps a front-end
    #: writes into a conversation give it (when.Clock).
    created: float
    text: str
    #: For an answer, the question it answers (-1: none).
    reply_to: int = -1


def recallable(m: MessageRecord) -> bool:
    return (m.kind == "message" and m.status == "complete" and m.role in ("user", "assistant")
            and bool(m.content.strip()))


def _pieces(text: str) -> list[str]:
    """`text` in pieces of at most PASSAGE_CHARS, cut where it ends a paragraph, a line or a
    sentence (a run with none is cut where it must)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        units = [u for line in block.split("\n") for u in _SENTENCE_END.split(line)]
        current = ""
        for unit in units:
            while len(unit) > PASSAGE_CHARS:  # a run with no end in sight
                cut = unit.rfind(" ", 0, PASSAGE_CHARS)
                cut = cut if cut > PASSAGE_CHARS // 2 else PASSAGE_CHARS
                if current:
                    out.append(current)
                    current = ""
                out.append(unit[:cut])
                unit = unit[cut:].lstrip()
            if current and len(current) + 1 + len(unit) > PASSAGE_CHARS:
                out.append(current)
                current = unit
            else:
                current = f"{current} {unit}" if current else unit
        if current:
            out.append(current)
    return [p for p in (piece.strip() for piece in out) if p]


def passages(m: MessageRecord, said: float | None = None) -> list[Passage]:
    """The message's passages (none when it is not recallable), dated `said` (default: when
    it was stored; when.Clock)."""
    if not recallable(m):
        return []
    text = without_own_words(m.content).strip()
    if not text:
        return []
    pieces = [text] if len(text) <= WHOLE_CHARS else _pieces(text)
    created = m.created if said is None else said
    return [Passage(seq=m.seq, part=i, parts=len(pieces), role=m.role, created=created,
                    text=piece, reply_to=m.reply_to) for i, piece in enumerate(pieces)]
