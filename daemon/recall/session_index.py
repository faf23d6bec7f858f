"""One session's recall index: its passages ranked by words and (as far as computed) by
meaning, with what recall needs to pair and leave out passages."""

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxkeep.daemon.recall.sittings import Sittings
from ctxkeep.daemon.retrieval import select, when
from ctxkeep.daemon.retrieval.bm25 import LexicalIndex
from ctxkeep.daemon.retrieval.lexical import terms
from ctxkeep.daemon.retrieval.passages import Passage, passages
from ctxkeep.daemon.retrieval.speakers import Speakers
from ctxkeep.daemon.retrieval.vectors import SemanticIndex
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.daemon.tokens import Vector, text_features


@dataclass
class SessionIndex:
    """One session's passages, ranked by words and (as far as computed) by meaning."""

    lexical: LexicalIndex = field(default_factory=LexicalIndex)
    semantic: SemanticIndex = field(default_factory=SemanticIndex)
    #: A message's passage ids, by seq; an answer by the question it answers.
    by_seq: dict[int, list[int]] = field(default_factory=dict)
    answers: dict[int, int] = field(default_factory=dict)
    #: Each passage's line in the block, as features (by passage id).
    lines: list[Vector] = field(default_factory=list)
    #: Every answer's seq, by the question it answers.
    answered_by: dict[int, list[int]] = field(default_factory=dict)
    #: Messages a regenerate or an edit replaced (with an edited question's answers): the
    #: conversation the user kept does not hold them, so they are never recalled.
    replaced: set[int] = field(default_factory=set)
    #: The hash of every passage's text: what memory need not bring from other sessions
    #: (a branch's copies of this conversation's turns).
    texts: set[int] = field(default_factory=set)
    #: When each message was said, by the stamps a front-end wrote into them (if any).
    clock: when.Clock = field(default_factory=when.Clock)
    #: The sittings the passages were said in.
    sittings: Sittings = field(default_factory=Sittings)
    #: Who speaks, in a chat log's session: the names its messages open with or greet by.
    speakers: Speakers = field(default_factory=Speakers)
    #: Held while messages are added from the store (indexes.py), in a worker thread or not.
    catching_up: asyncio.Lock = field(default_factory=asyncio.Lock, compare=False, repr=False)
    #: Each ranked passage's terms, as far as asked (`term_set`).
    _terms: dict[int, frozenset[str]] = field(default_factory=dict)

    def add(self, messages: Sequence[MessageRecord]) -> None:
        start = len(self.lexical.passages)
        new = [p for m in messages for p in passages(m, self.clock.said(m.content, m.created))]
        self.lexical.add(new)
        self.lines += [text_features(select.line(p) + "\n") for p in new]
        self.texts |= {hash(p.text) for p in new}
        for pid, p in enumerate(new, start):
            self.by_seq.setdefault(p.seq, []).append(pid)
            self.sittings.add(pid, p)
            if p.role == "assistant" and p.reply_to >= 0:
                self.answers[p.reply_to] = p.seq
        for m in messages:
            self.speakers.add(m.role, m.content)
            if m.role == "assistant" and m.reply_to >= 0:
                self.answered_by.setdefault(m.reply_to, []).append(m.seq)
            self.replaced |= self.replaced_by(m)
        if messages:
            self.lexical.next_seq = max(self.lexical.next_seq, messages[-1].seq + 1)

    def term_set(self, pid: int) -> frozenset[str]:
        """The passage's terms (kept once asked: recall asks of its best-ranked ones)."""
        found = self._terms.get(pid)
        if found is None:
            found = self._terms[pid] = frozenset(terms(self.lexical.passages[pid].text))
        return found

    def replaced_by(self, m: MessageRecord) -> set[int]:
        """What message `m` replaced: a regenerated answer its predecessor; an edited
        question the question it rewords, and that one's answers."""
        if m.alternative_of < 0:
            return set()
        if m.role == "user":
            return {m.alternative_of, *self.answered_by.get(m.alternative_of, ())}
        return {m.alternative_of}

    def partners(self, p: Passage) -> list[int]:
        """The passage's partner: an answer's question, a question's answer (first parts)."""
        other = p.reply_to if p.role == "assistant" else self.answers.get(p.seq, -1)
        return self.by_seq.get(other, [])[:1]
