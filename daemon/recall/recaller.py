"""The recall a turn asks for: from the session's whole history, the passages its new
message needs that the active context no longer holds, within the room the window leaves.

Each session's index is built from the store when a turn first needs it (the passages of
every message stored; in a worker thread when there are many) and grows with the
session; the indexes of the sessions used last are kept. Ranking is lexical (BM25 over
stems) fused with semantic (embeddings, when the embedding model answers) by their
normalized scores (select.fuse: newer passages, and those of the speaker a question asks
about, raised); selection is best first within the budget, an answer with its question.
"""

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.features import JOIN, add
from ctxkeep.daemon.backends.protocol import ModelBackend
from ctxkeep.daemon.recall import select
from ctxkeep.daemon.recall.lexical import LexicalIndex, query_terms, terms
from ctxkeep.daemon.recall.passages import Passage, passages
from ctxkeep.daemon.recall.semantic import Embedder, SemanticIndex
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.tokens import ZERO, Vector, text_features

log = logging.getLogger(__name__)

#: Sessions whose indexes are kept.
SESSIONS_KEPT = 8
#: Messages indexed in the event loop's own thread; more go to a worker thread.
INLINE_MESSAGES = 2000
#: Passages each ranking hands to the fusion.
RANKED = 200
#: The least room worth a recall.
MIN_ROOM = 48
#: What the second hop (the best passages' rare terms asked again) weighs in the fusion.
SECOND_HOP = 0.5


@dataclass(frozen=True)
class Recall:
    """What a turn's prompt recalls: the block opening the new message (empty: none), its
    passages, its estimated tokens and its features (with the blank line that joins it)."""

    block: str = ""
    passages: tuple[Passage, ...] = ()
    tokens: int = 0
    features: Vector = ZERO
    semantic: bool = False

    @property
    def seqs(self) -> list[int]:
        return sorted({p.seq for p in self.passages})


NONE = Recall()


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

    def add(self, messages: Sequence[MessageRecord]) -> None:
        start = len(self.lexical.passages)
        new = [p for m in messages for p in passages(m)]
        self.lexical.add(new)
        self.lines += [text_features(select.line(p) + "\n") for p in new]
        for pid, p in enumerate(new, start):
            self.by_seq.setdefault(p.seq, []).append(pid)
            if p.role == "assistant" and p.reply_to >= 0:
                self.answers[p.reply_to] = p.seq
        for m in messages:
            if m.role == "assistant" and m.reply_to >= 0:
                self.answered_by.setdefault(m.reply_to, []).append(m.seq)
            self.replaced |= self.replaced_by(m)
        if messages:
            self.lexical.next_seq = max(self.lexical.next_seq, messages[-1].seq + 1)

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


class Recaller:
    """Recall for the turns of every session."""

    def __init__(self, store: Store, backend: ModelBackend, estimator: Estimator,
                 config: Config) -> None:
        self.store = store
        self.estimator = estimator
        self.config = config
        self.embedder = Embedder(store, backend, lambda: config.embed_model)
        self._indexes: OrderedDict[str, SessionIndex] = OrderedDict()

    def enabled(self, session: SessionRecord) -> bool:
        return self.config.recall if session.recall is None else session.recall

    def cap(self, session: SessionRecord, available: int) -> int:
        """The most tokens recall may take: the session's or the daemon's recall_budget,
        else the level-1 threshold's share of the conversation's budget (`available`, recall's
        own share included)."""
        chosen = session.recall_budget if session.recall_budget is not None else self.config.recall_budget
        if chosen:
            return chosen
        thresholds = session.thresholds or self.config.compaction_thresholds
        return int(thresholds[0] * available)

    def status(self) -> str:
        """Recall as `status` shows it."""
        if not self.config.recall:
            return "off (recall = false in config.toml)"
        model = self.config.embed_model
        if not model:
            return "by words only (no embed_model set)"
        if self.embedder.unavailable:
            return (f"by words only: the embedding model {model} is not available "
                    f"(`ollama pull {model}` adds recall by meaning)")
        return f"by words and meaning ({model})"

    def forget(self, session_id: str) -> None:
        self._indexes.pop(session_id, None)

    async def recall(self, session: SessionRecord, context: ActiveContext,
                     active: Sequence[MessageRecord], user: MessageRecord, budget: int) -> Recall:
        """What the turn with the question `user` recalls within `budget` tokens. Nothing
        said after the question is (a regenerated turn's: the answers it replaces)."""
        if budget < MIN_ROOM or not self.enabled(session):
            return NONE
        after = range(user.seq + 1, session.next_seq) if user.seq >= 0 else range(0)
        in_context = {*context.seqs, *session.pending, user.seq, *after}
        if session.message_count <= len(in_context):
            return NONE  # everything said is in the prompt already
        index = await self._index(session.id)
        in_context |= index.replaced | index.replaced_by(user)
        last_turn = [m.content for m in active[-2:] if m.role in ("user", "assistant")]
        context_text = select.context_for(user.content, len(set(terms(user.content))), last_turn)
        query = query_terms(user.content, context_text)
        first = index.lexical.rank(query, in_context, RANKED)
        second = index.lexical.rank(index.lexical.expansion(first, query), in_context, RANKED)
        ranked, weights = [first, second], [1.0, SECOND_HOP]
        semantic = False
        if index.semantic.ids:  # the message, and what it refers back to: the last question
            asked = [m.content for m in active[-2:] if m.role == "user"]
            query = "\n".join([*asked, user.content]) if select.refers_back(user.content) else user.content
            vector = await self.embedder.vector(query, self.config.recall_embed_wait_ms / 1000)
            if vector is not None:
                ranked.append(index.semantic.rank(vector, index.lexical.passages, in_context, RANKED))
                weights.append(1.0)
                semantic = True
        asks_of = select.addressed(user.content)
        scores = select.fused(*ranked, weights=weights,
                              favored=lambda pid: index.lexical.passages[pid].role == asks_of)
        if not scores:
            return NONE
        model = session.model
        overhead = self.estimator.text(model, f"{select.OPENING}\n{select.CLOSING}")
        chosen = select.select(sorted(scores, key=lambda pid: (-scores[pid], -pid)), index.lexical.passages,
                               budget, overhead, lambda pid: self.estimator.estimate(model, index.lines[pid]),
                               index.partners, scores.__getitem__)
        if not chosen:
            return NONE
        text = select.block(chosen)
        features = add(text_features(text), JOIN)
        return Recall(block=text, passages=tuple(chosen), tokens=self.estimator.estimate(model, features),
                      features=features, semantic=semantic)

    def room(self, window: int, reserve: int, raised_prompt: int, cap: int, margin: float) -> int:
        """The tokens recall may take: what the window leaves beside the prompt (raised by
        its possible error) and the reply room, allowing `margin` on the block itself, and
        no more than `cap`."""
        left = window - reserve - raised_prompt
        return max(0, min(cap, math.floor(left / (1 + margin))))

    async def _index(self, session_id: str) -> SessionIndex:
        """The session's index, with every message stored so far."""
        index = self._indexes.pop(session_id, None) or SessionIndex()
        self._indexes[session_id] = index
        while len(self._indexes) > SESSIONS_KEPT:
            self._indexes.popitem(last=False)
        behind = self.store.sessions.get(session_id).next_seq - index.lexical.next_seq
        if behind > INLINE_MESSAGES:
            log.info("session=%s: indexing %d messages for recall", session_id, behind)
            await asyncio.to_thread(self._catch_up, session_id, index)
        elif behind > 0:
            self._catch_up(session_id, index)
        if index.semantic.done < len(index.lexical.passages):
            self.embedder.want(session_id, lambda: (index.lexical.passages, index.semantic))
        return index

    def _catch_up(self, session_id: str, index: SessionIndex) -> None:
        start: int | None = index.lexical.next_seq
        while start is not None:
            page, start, _ = self.store.history.page(session_id, start=start, limit=1000)
            index.add(page)
            if not page:
                break

    async def prepare(self, session_id: str) -> None:
        """Index a session ahead of its first turn (an import): its passages, and their
        embeddings in the background."""
        await self._index(session_id)

    def stored(self, session_id: str) -> None:
        """Messages were stored: if the session's index is kept, have them embedded soon
        (they join the index itself when a turn next needs it)."""
        index = self._indexes.get(session_id)
        if index is not None:
            self._catch_up(session_id, index)
            self.embedder.want(session_id, lambda: (index.lexical.passages, index.semantic))

    async def close(self) -> None:
        await self.embedder.close()
