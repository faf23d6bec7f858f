"""What a turn's prompt recalls: the block, its passages, what memory brought and the
verbatim messages whose room it takes."""

from dataclasses import dataclass

from ctxkeep.daemon.memory.query import Remembered
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.tokens import ZERO, Vector
from ctxkeep.protocol.memory import MemoryRef
from ctxkeep.protocol.structs import RecalledPassage


@dataclass(frozen=True)
class Recall:
    """What a turn's prompt recalls: the block opening the new message (empty: none), its
    passages, its estimated tokens and its features (with the blank line that joins it)."""

    block: str = ""
    passages: tuple[Passage, ...] = ()
    tokens: int = 0
    features: Vector = ZERO
    semantic: bool = False
    #: What memory brought from the user's other sessions (its block opens `block`).
    remembered: tuple[Remembered, ...] = ()
    #: The oldest verbatim messages whose room the block takes (room.py): they leave the
    #: active context with this turn (recallable word for word, as every message is).
    displaced: tuple[int, ...] = ()
    #: What recall found for the room without the reading bound (its estimated tokens), and
    #: why the block holds less ("" when it holds all of it).
    found: int = 0
    cut: str = ""
    #: Of `tokens`, memory's block's (estimated).
    memory_tokens: int = 0

    @property
    def seqs(self) -> list[int]:
        return sorted({p.seq for p in self.passages})

    @property
    def sources(self) -> list[MemoryRef]:
        """The messages of other sessions memory brought, each once."""
        refs = dict.fromkeys((r.session_id, r.passage.seq) for r in self.remembered)
        return [MemoryRef(session_id=sid, seq=seq) for sid, seq in refs]

    def shown(self) -> list[RecalledPassage]:
        """Its passages as the `generation.recalled` event lists them (memory's first, as
        in the block)."""
        def info(p: Passage, session_id: str = "", name: str = "") -> RecalledPassage:
            return RecalledPassage(seq=p.seq, part=p.part, parts=p.parts, role=p.role,  # type: ignore[arg-type]
                                   created=p.created, text=p.text, session_id=session_id, session_name=name)
        return [*(info(r.passage, r.session_id, r.session_name) for r in self.remembered),
                *(info(p) for p in self.passages)]


NONE = Recall()
