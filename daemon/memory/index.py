"""Memory's index: the passages of every session in one BM25 index (and their vectors, as
the embedder computes them), each passage knowing its session, so that a turn of one
session ranks what the user said in all the others in one pass.

What may come back is decided per turn by flags over passage ids (numpy), not by
rebuilding: a session deleted, private or forgotten, a message forgotten or replaced by a
retry or an edit, is left out from the next turn on. Privacy follows the words: a passage
whose text is also a private or forgotten one's (a branch, a resent or imported copy, a
restored snapshot) is left out with it, whatever session holds the copy.
"""

from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ctxkeep.daemon.memory.people import People
from ctxkeep.daemon.retrieval import select, when
from ctxkeep.daemon.retrieval.bm25 import LexicalIndex, counts_of
from ctxkeep.daemon.retrieval.passages import Passage, passages
from ctxkeep.daemon.retrieval.vectors import SemanticIndex
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.tokens import Vector, text_features


@dataclass
class Owner:
    """A session as memory holds it."""

    number: int
    session_id: str
    name: str = ""
    #: Its conversation: the session its branches were first taken from (its own id when
    #: it is no branch). Branches of one conversation never recall each other.
    family: str = ""
    #: Seqs indexed so far run below this.
    next_seq: int = 0
    #: Its messages memory leaves out: forgotten by the user, or replaced (retry, edit).
    forgotten: set[int] = field(default_factory=set)
    replaced: set[int] = field(default_factory=set)
    #: Every answer's seq, by the question it answers (to know what an edit replaced).
    answered_by: dict[int, list[int]] = field(default_factory=dict)
    #: Its passage ids, by message seq.
    pids: dict[int, list[int]] = field(default_factory=dict)
    #: When each message was said, by the stamps a front-end wrote into them (if any): the
    #: clock a question's span ("last week", by its own stamp) is on, as in recall.
    clock: when.Clock = field(default_factory=when.Clock)


@dataclass
class Counted:
    """Per passage id, whether the word statistics leave it out; (passages, the index's
    `shut` changes) when `counting.recount` last looked; the hashes of the texts left out."""

    uncounted: bytearray = field(default_factory=bytearray)
    at: tuple[int, int] = (0, 0)
    out_texts: set[int] = field(default_factory=set)


class MemoryIndex:
    """Every session's passages; `allowed` says which sessions may be recalled now."""

    def __init__(self) -> None:
        self.lexical = LexicalIndex()
        self.semantic = SemanticIndex()
        #: Each passage's owner number, whether it is hidden (forgotten or replaced), and
        #: its text's hash (a copy of a private or forgotten text is left out with it).
        self.owner_of = array("I")
        self.hidden = bytearray()
        self.text_hash = array("q")
        #: (passages, changes) when `_secret` was worked out, and what it was.
        self._secret_at: tuple[int, int] = (-1, -1)
        self._secret = np.zeros(0, dtype=bool)
        self.changes = 0
        #: Each passage's line in a block (without its session's name), as features.
        self.lines: list[Vector] = []
        self.owners: dict[str, Owner] = {}
        self.by_number: list[Owner | None] = []
        #: Per owner number: may it be recalled elsewhere (not deleted, private or forgotten),
        #: and the number of its conversation (family).
        self.allowed = np.zeros(0, dtype=bool)
        self.families = np.zeros(0, dtype=np.int64)
        self._family_numbers: dict[str, int] = {}
        #: Passages of deleted sessions (kept until a rebuild).
        self.dead = 0
        #: Changes to what may be brought back (a session made private or shared, forgotten,
        #: deleted), and which passages the word statistics leave out for them (counting.py).
        self.shut = 0
        self.counted = Counted()
        #: The writers of the chat logs among the sessions.
        self.people = People()

    @property
    def passages(self) -> list[Passage]:
        return self.lexical.passages

    def owner(self, session: SessionRecord, family: str = "") -> Owner:
        """The session's owner entry (made on first sight), its settings taken in; `family`:
        the first session of its conversation (default: itself)."""
        found = self.owners.get(session.id)
        if found is None:
            found = self.owners[session.id] = Owner(len(self.by_number), session.id)
            self.by_number.append(found)
            if len(self.allowed) < len(self.by_number):
                grown = max(64, len(self.allowed))
                self.allowed = np.concatenate([self.allowed, np.zeros(grown, dtype=bool)])
                self.families = np.concatenate([self.families, np.zeros(grown, dtype=np.int64)])
        found.name = session.name
        found.family = family or session.id
        self.families[found.number] = self._family_number(found.family)
        allowed = session.remembered and session.memory != "private"
        if bool(self.allowed[found.number]) != allowed:
            self.allowed[found.number] = allowed
            self.changes += 1
            self.shut += bool(found.pids)  # (a new session's first sight changes nothing counted)
        forgotten = set(session.forgotten)
        if forgotten != found.forgotten:
            for seq in forgotten ^ found.forgotten:
                self._hide(found, seq, seq in forgotten or seq in found.replaced)
            found.forgotten = forgotten
            self.shut += 1
        return found

    def add(self, owner: Owner, messages: Sequence[MessageRecord], cut: Sequence[list[Passage]] | None = None,
            counted: Sequence[list[Counter[str]]] | None = None) -> None:
        """Messages of the owner's session, in order, after those indexed; with `cut` and
        `counted`, each one's passages and their term counts (`prepared`)."""
        for n, m in enumerate(messages):
            if m.seq < owner.next_seq:
                continue
            owner.next_seq = m.seq + 1
            self.people.add(owner.number, m.role, m.content)
            for seq in self._replaces(owner, m):
                owner.replaced.add(seq)
                self._hide(owner, seq, True)
            said = owner.clock.said(m.content, m.created)
            new = cut[n] if cut is not None else passages(m)
            if new and new[0].created != said:
                new = [replace(p, created=said) for p in new]
            if not new:
                continue
            start = len(self.lexical.passages)
            self.lexical.add(new, counted[n] if counted is not None else None)
            self.lines += [text_features(select.line(p) + "\n") for p in new]
            owner.pids[m.seq] = list(range(start, start + len(new)))
            self.owner_of.extend([owner.number] * len(new))
            self.hidden.extend([m.seq in owner.forgotten] * len(new))
            self.counted.uncounted.extend(bytes(len(new)))
            self.text_hash.extend(hash(p.text.strip()) for p in new)
        self.people.settle(owner.number)

    def _replaces(self, owner: Owner, m: MessageRecord) -> list[int]:
        if m.role == "assistant" and m.reply_to >= 0:
            owner.answered_by.setdefault(m.reply_to, []).append(m.seq)
        if m.alternative_of < 0:
            return []
        if m.role == "user":
            return [m.alternative_of, *owner.answered_by.get(m.alternative_of, ())]
        return [m.alternative_of]

    def _hide(self, owner: Owner, seq: int, hidden: bool) -> None:
        for pid in owner.pids.get(seq, ()):
            self.hidden[pid] = hidden
        self.changes += 1

    def secret(self) -> np.ndarray:
        """A flag per passage id: is its text also one memory may not bring back (of a
        private, forgotten or deleted session, or a forgotten message)? Worked out again
        only when that changed, or passages were added."""
        if self._secret_at != (len(self.passages), self.changes):
            owners = np.frombuffer(self.owner_of, dtype=np.uint32)
            shut = ~self.allowed[owners] | (np.frombuffer(self.hidden, dtype=np.uint8) != 0)
            hashes = np.frombuffer(self.text_hash, dtype=np.int64)
            self._secret = np.isin(hashes, hashes[shut]) if shut.any() else np.zeros(len(hashes), dtype=bool)
            self._secret_at = (len(self.passages), self.changes)
        return self._secret

    def drop(self, session_id: str) -> None:
        """A deleted session: never recalled again (its passages stay until a rebuild, out
        of the word statistics once recounted: counting.py)."""
        owner = self.owners.pop(session_id, None)
        if owner is None:
            return
        self.allowed[owner.number] = False
        self.changes += 1
        self.shut += 1
        self.by_number[owner.number] = None
        self.dead += sum(len(ids) for ids in owner.pids.values())

    def _family_number(self, family: str) -> int:
        return self._family_numbers.setdefault(family, len(self._family_numbers) + 1)

    def candidates(self, asker: str, family: str = "") -> np.ndarray:
        """A flag per passage id: may it come back into a turn of session `asker` (of the
        conversation `family`: none of its sessions' passages may)."""
        owners = np.frombuffer(self.owner_of, dtype=np.uint32)
        flags = self.allowed[owners] & (np.frombuffer(self.hidden, dtype=np.uint8) == 0) & ~self.secret()
        own = self.owners.get(asker)
        if own is not None:
            flags &= owners != own.number
        if family or own is not None:
            flags &= self.families[owners] != self._family_number(family or own.family)  # type: ignore[union-attr]
        return flags

    def holding(self, terms: frozenset[str]) -> np.ndarray:
        """Per passage id, how many of `terms` (stems) it holds (true where any)."""
        held = np.zeros(len(self.passages), dtype=np.uint16)
        for term in terms:
            found = self.lexical.postings.get(term)
            if found is not None:
                held[np.frombuffer(found[0], dtype=np.uint32)] += 1
        return held

    def source(self, pid: int) -> Owner | None:
        """The session a passage is from (None: deleted)."""
        return self.by_number[self.owner_of[pid]]

    def partners(self, p: Passage, pid: int) -> list[int]:
        """The passage's partner in its own session: an answer's question, a question's
        answer (the first part of it)."""
        owner = self.source(pid)
        if owner is None:
            return []
        if p.role == "assistant":
            other = p.reply_to
        else:
            answers = [a for a in owner.answered_by.get(p.seq, ()) if a not in owner.replaced]
            other = answers[-1] if answers else -1
        return owner.pids.get(other, [])[:1]


def prepared(page: Sequence[MessageRecord]) -> tuple[list[list[Passage]], list[list[Counter[str]]]]:
    """The passages of a page of messages and their term counts (pure: any thread)."""
    cut = [passages(m) for m in page]
    return cut, [[counts_of(p) for p in ps] for ps in cut]


def family(session: SessionRecord, get: Callable[[str], SessionRecord | None]) -> str:
    """The first session of `session`'s conversation, following `branched_from` (a deleted
    source ends the chain; a loop cannot, as a branch is made after its source)."""
    seen = {session.id}
    while session.branched_from and session.branched_from not in seen:
        source = get(session.branched_from)
        if source is None:
            return session.branched_from
        seen.add(source.id)
        session = source
    return session.id


def time_span(times: list[float]) -> tuple[float, float]:
    """The oldest and newest of `times` (never the same: recency divides by their gap)."""
    if not times:
        return 0.0, 1.0
    oldest, newest = min(times), max(times)
    return oldest, newest if newest > oldest else oldest + 1.0
