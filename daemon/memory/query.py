"""What a turn asks recall and memory (`Query`), and what memory brings back (`Remembered`)."""

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from ctxkeep.daemon.retrieval.passages import Passage


@dataclass(frozen=True)
class Remembered:
    """A passage of another session that memory brings into a prompt."""

    session_id: str
    session_name: str
    passage: Passage
    score: float = 0.0
    #: The passage's id in memory's index.
    pid: int = -1


class Query(msgspec.Struct, frozen=True):
    """What a turn asks recall and memory: its terms (with weights), its vector (None: words
    only), whose words it asks about, what its own session holds (texts' hashes) and when.
    (A Struct: made once or twice a turn, on the way to the model request, at C speed.)"""

    terms: Mapping[str, float]
    vector: list[float] | None = None
    asks_of: str | None = None
    holds: frozenset[int] | set[int] = frozenset()
    #: The span of time it asks about (retrieval/when.py), if it names one.
    span: tuple[float, float] | None = None
    #: The terms of the new message itself (not of the turn before, which `terms` may
    #: hold): memory brings back only passages that share one of them.
    own: frozenset[str] = frozenset()
    #: Whether the message speaks of the user's own past (asking.about_the_past): memory
    #: brings nothing into a turn that does not ("what is the capital of Canada?").
    about_past: bool = True
    #: Whether its vector is of the question before it too: a message that leans on the turn
    #: before (select.leans_on_last_turn) and refers back to it ("and where was it?").
    with_turn_before: bool = False
