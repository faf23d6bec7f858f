"""How memory's passages read in a prompt: one marked block before the session's own
recall, each line saying when, in which conversation, and who said it."""

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ctxkeep.daemon.context.features import add
from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.tokens import Vector, text_features

if TYPE_CHECKING:
    from ctxkeep.daemon.memory.memory import Memory
    from ctxkeep.daemon.memory.query import Remembered

OPENING = ("<recalled from the user's other conversations — not part of my new message; oldest "
           "first, with when, in which conversation, and who said it>")
#: What the block's opening and closing lines add to a prompt (worked out once: each turn asks).
FRAME = text_features(f"{OPENING}\n{select.CLOSING}")


def where(name: str) -> str:
    return f' in "{name}"' if name else " in another conversation"


def line(r: "Remembered") -> str:
    """`[when] in "name" who: text` (select.line with the conversation named)."""
    own = select.line(r.passage)
    stamp, rest = own.split("] ", 1)
    return f"{stamp}]{where(r.session_name)} {rest}"


def line_features(memory: "Memory", pid: int, name: str) -> Vector:
    """The features of a passage's line with its conversation's name (its line without the
    name is kept with the index)."""
    index = memory.index
    assert index is not None
    return add(index.lines[pid], _where_features(name))


@lru_cache(maxsize=1024)
def _where_features(name: str) -> Vector:
    """A conversation name's features (asked for every candidate passage, every turn)."""
    return text_features(where(name))


def block_features(memory: "Memory", remembered: Sequence["Remembered"]) -> Vector:
    """The features of `block(remembered)`, from the lines' kept features."""
    return select.block_features((line_features(memory, r.pid, r.session_name) for r in remembered), OPENING)


def block(remembered: Sequence["Remembered"]) -> str:
    return "\n".join([OPENING, *(line(r) for r in remembered), select.CLOSING]) if remembered else ""
