"""What a turn recalls from its session's own history: the passages outside the prompt its
new message needs, ranked by words (and a second hop of the best passages' rare terms), by
meaning, and — for a message about the past that names a span — by what was said within it,
fused (select.fused), within the room given and the room of the exchanges recall may move."""

import functools
from collections.abc import Callable
from dataclasses import dataclass

from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.memory.query import Query
from ctxkeep.daemon.recall import gate
from ctxkeep.daemon.recall import room as recall_room
from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.retrieval import asking, select, sharing, when
from ctxkeep.daemon.retrieval.lexical import terms, unstamped
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.retrieval.semantic import Embedder
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord

#: Passages each ranking hands to the fusion.
RANKED = 200
#: What the second hop (the best passages' rare terms asked again) weighs in the fusion.
SECOND_HOP = 0.5
#: Passages that stand out by meaning offered for the room kept for them (sharing.MEANING_SHARE).
NEAR = 20
#: The best passages whose later change a question of what holds now looks for.
CHANGED_FROM = 3


def without(scores: dict[int, float], near: list[int], gone: Callable[[int], bool]) -> tuple[dict[int, float], list[int]]:
    """The scored passages and those near by meaning, less those `gone` says."""
    return {pid: s for pid, s in scores.items() if not gone(pid)}, [pid for pid in near if not gone(pid)]


@dataclass
class OwnHistory:
    """The session's own history as recall's first source."""

    estimator: Estimator
    embedder: Embedder

    def passages(self, session: SessionRecord, context: ActiveContext, user: MessageRecord, index: SessionIndex,
                 asked: Query, in_context: set[int], budget: int,
                 movable: recall_room.Movable) -> tuple[list[Passage], tuple[int, ...]]:
        """The passages of the session's own history the turn recalls (none of `in_context`:
        Recaller._in_prompt), and the movable exchanges whose room they take."""
        query, vector, asks_of = asked.terms, asked.vector, asked.asks_of
        moving = movable.seqs
        active = set(in_context)
        in_context = (in_context - moving) | index.replaced | index.replaced_by(user)
        passages = index.lexical.passages
        said = frozenset(terms(unstamped(user.content)))
        echo = lambda pid: select.echoes(index.term_set(pid), said, asked.about_past)  # (adds nothing)
        first = [(pid, s) for pid, s in select.statements_first(index.lexical.rank(query, in_context, RANKED),
                                                                   passages) if not echo(pid)]
        in_prompt = lambda pid: passages[pid].seq in in_context
        on_topic = None if asked.about_past else self._about(index, user, asked)
        best = [pid for pid, _ in first]
        if not gate.asks_of_the_past(best, asked.about_past, on_topic):
            return [], ()  # before the second hop: a message that asks nothing of the past costs one ranking
        by_meaning = index.semantic.rank(vector, in_prompt, RANKED, select.MEANING_STAND_OUT) \
            if vector is not None and index.semantic.ids else None
        if on_topic is not None and by_meaning is not None and vector is not None \
                and not asked.with_turn_before:  # (else the vector is of the turn before too)
            # words met by chance, unless meaning agrees
            on_topic = gate.near_too(on_topic, index.semantic.nearest(vector, gate.NEAREST, gate.NEAREST_LEAST))
            if not gate.asks_of_the_past(best, False, on_topic):
                return [], ()
        hop = index.lexical.expansion(first, query)
        second = select.statements_first(index.lexical.rank(hop, in_context, RANKED), passages)
        ranked, weights = [first, second], [1.0, SECOND_HOP]
        near: list[int] = []
        if by_meaning is not None:
            ranked.append(by_meaning)
            weights.append(1.0)
            if asked.about_past and asked.span is not None and vector is not None:
                ranked.append(self._said_then(index, vector, asked.span, in_prompt))
                weights.append(select.THEN)
            if asked.about_past and vector is not None:
                near = [pid for pid, _ in index.semantic.rank(vector, in_prompt, NEAR, select.MEANING_STAND_OUT)]
        scores = select.lifted(select.fused(*ranked, weights=weights,
                                            favored=lambda pid: index.lexical.passages[pid].role == asks_of),
                               index.lexical.passages, asked.span, when.LIFT)
        if on_topic is not None:  # a message that does not speak of the past: only what is about it,
            linked = self._linked(index, hop, best, on_topic)  # or what its second hop found of it
            scores = {pid: s for pid, s in scores.items() if on_topic(pid) or linked & index.term_set(pid)}
        else:  # (and what the sittings they were said in were about; and what changed them since)
            scores = self._changed_since(index, user, index.sittings.with_openings(scores, in_prompt), in_prompt)
        scores, near = without(scores, near, echo)
        gathering = asking.gathers(user.content)  # (it needs what each of several turns said)
        scores = select.above_floor(scores, select.GATHER_FLOOR if gathering else select.FLOOR)
        held = "\n".join(c.summary for c in context.checkpoints)
        if held:  # a passage a checkpoint quotes whole (a fact it kept) is in the prompt already
            scores, near = without(scores, near, lambda pid: passages[pid].text in held)
        rare = index.lexical.rare(query)
        specific = lambda pid: bool(rare & index.term_set(pid))
        if moving and not (asking.asks(unstamped(user.content))
                           and recall_room.reaches(scores, passages, moving, active, specific, asked.about_past)):
            scores, near = without(scores, near, lambda pid: passages[pid].seq in moving)
            movable = recall_room.NOTHING
        return self._chosen(session.model, index, scores, near, budget, movable) if scores else ([], ())

    @staticmethod
    def _changed_since(index: SessionIndex, user: MessageRecord, scores: dict[int, float],
                       in_prompt: Callable[[int], bool]) -> dict[int, float]:
        """For a question of what holds now, `scores` with the passage said after each of the
        best that stands out nearest it by meaning, from the same speaker, at its score: what
        changed it ("I quit my old job, I'm a nurse now" after "I work as a librarian these
        days"), which shares few of the question's words and ranks below the older statement."""
        if not asking.holds_now(user.content) or not index.semantic.ids:
            return scores
        passages, out = index.lexical.passages, dict(scores)
        for pid in sorted(scores, key=lambda p: -scores[p])[:CHANGED_FROM]:
            vector = index.semantic.vector(pid)
            role = passages[pid].role
            later = index.semantic.rank(vector, lambda q: q <= pid or in_prompt(q) or passages[q].role != role,
                                        1, select.MEANING_STAND_OUT) if vector is not None else []
            for found, _ in later:
                out[found] = max(out.get(found, 0.0), scores[pid])
        return out

    @staticmethod
    def _linked(index: SessionIndex, hop: dict[str, float], best: list[int],
                on_topic: Callable[[int], bool]) -> frozenset[str]:
        """The second hop's terms held by a best passage that is about the message: what the
        passage found names ("the person who adopted the poodle" → "Leona"), whose other
        passages answer the rest of the question ("Leona lives in Bologna")."""
        return frozenset(t for t in hop if any(on_topic(pid) and t in index.term_set(pid) for pid in best[:3]))

    @staticmethod
    def _said_then(index: SessionIndex, vector: list[float], span: tuple[float, float],
                   in_prompt: Callable[[int], bool]) -> list[tuple[int, float]]:
        """The passages outside the prompt said within `span`, by meaning among themselves
        (select.said_then)."""
        start, end = span
        passages = index.lexical.passages
        return select.said_then(index.semantic.rank(
            vector, lambda pid: in_prompt(pid) or not start <= passages[pid].created < end, RANKED, None))

    def _chosen(self, model: str, index: SessionIndex, scores: dict[int, float], near: list[int], budget: int,
                movable: recall_room.Movable) -> tuple[list[Passage], tuple[int, ...]]:
        """The passages scored (`scores`, and those `near` by meaning) that fit `budget` and
        the room of the `movable` exchanges that those scoring above them need
        (recall_room.made), and the exchanges whose room they take."""
        overhead = self.estimator.estimate(model, select.FRAME)
        cost = functools.cache(lambda pid: self.estimator.estimate(model, index.lines[pid]))  # (the room asks too)
        ranked_ids = select.distinct(select.unrepeated(sorted(scores, key=lambda pid: (-scores[pid], -pid)),
                                                       lambda pid: index.lexical.passages[pid].text), index.term_set)
        room = self._room(index, scores, ranked_ids, budget, movable, cost, overhead) if movable.exchanges else budget
        chosen = sharing.select(ranked_ids, index.lexical.passages, room, overhead, cost,
                                index.partners, scores.__getitem__, near)
        if not movable.exchanges:
            return chosen, ()
        return recall_room.fit(chosen, lambda p: cost(index.by_seq[p.seq][p.part]), overhead, budget, movable)

    @staticmethod
    def _room(index: SessionIndex, scores: dict[int, float], ranked: list[int], budget: int,
              movable: recall_room.Movable, cost: Callable[[int], int], overhead: int) -> int:
        """`budget`, and the room of the `movable` exchanges that what outscores them needs
        (recall_room.made): each exchange by its best passage's score."""
        passages, best_of = index.lexical.passages, dict[int, float]()
        for pid, score in scores.items():
            seq = passages[pid].seq
            best_of[seq] = max(score, best_of.get(seq, 0.0))
        partners = lambda pid: index.partners(passages[pid])
        return recall_room.made(movable, budget, lambda seqs: max(best_of.get(seq, 0.0) for seq in seqs),
                                recall_room.needs(ranked, scores.__getitem__, cost, partners, overhead),
                                recall_room.STRONG * max(scores.values(), default=0.0))

    def _about(self, index: SessionIndex, user: MessageRecord, asked: Query) -> Callable[[int], bool] | None:
        """Whether a passage is about a message that does not speak of the past (`gate.about`);
        None where none is — and where meaning would have had to confirm what its words
        found (`gate.near_too`: the session's passages have vectors, the message does not
        refer back) but the message's vector came too late (`recall_embed_wait_ms`, the
        embedding model busy). Words alone would then let in what meaning turns away on a
        quiet turn: "the capital city of Canada" beside a musician's move "to Toronto,
        Canada", the same request recalled for on a busy turn and not on a quiet one."""
        if asked.vector is None and index.semantic.ids and not asked.with_turn_before \
                and index.semantic.model == self.embedder.current():
            return None
        return gate.about(index, user.content, asked.own)
