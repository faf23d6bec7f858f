"""The recall a turn asks for: from the session's whole history, the passages its new
message needs that the active context no longer holds, within the room the window leaves.

Each session's index is built from the store when a turn first needs it (the passages of
every message stored; in a worker thread when there are many) and grows with the
session; the indexes of the sessions used last are kept (indexes.py). What the session's own
history gives is ranked and chosen in own.py: lexical (BM25 over stems) fused with semantic
(embeddings, when the embedding model answers) by their normalized scores (select.fused: newer
passages, and those of the speaker a question asks about, raised); selection is best first
within the budget, an answer with its question. Memory follows (memory/bringing.py).
"""

import logging
import math
import time
from collections.abc import Sequence

import msgspec

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.features import JOIN, add
from ctxkeep.daemon.memory import block as memory_block
from ctxkeep.daemon.memory.bringing import bring
from ctxkeep.daemon.memory.memory import Memory
from ctxkeep.daemon.memory.query import Query, Remembered
from ctxkeep.daemon.recall import gate
from ctxkeep.daemon.recall import room as recall_room
from ctxkeep.daemon.recall.asked import Asked
from ctxkeep.daemon.recall.indexes import SessionIndexes
from ctxkeep.daemon.recall.own import OwnHistory
from ctxkeep.daemon.recall.recalled import NONE, Recall
from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.retrieval import asking, select, when
from ctxkeep.daemon.retrieval.lexical import asked_terms, has_words, query_terms, unstamped
from ctxkeep.daemon.retrieval.semantic import Embedder
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.tokens import ZERO, text_features

#: The features of the newline between memory's block and the session's own.
NEWLINE = text_features("\n")

log = logging.getLogger(__name__)

#: The least room worth a recall.
MIN_ROOM = 48


class Recaller:
    """Recall for the turns of every session."""

    def __init__(self, store: Store, estimator: Estimator, config: Config, embedder: Embedder,
                 memory: Memory | None) -> None:
        self.store = store
        self.estimator = estimator
        self.config = config
        self.embedder = embedder
        #: The user's other sessions, recalled after the session's own history (None: none).
        self.memory = memory
        self.indexes = SessionIndexes(store, embedder)
        #: What the session's own history gives a turn.
        self.own = OwnHistory(estimator, embedder)

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
        """Recall (and memory) as `status` shows it."""
        own = self._status()
        return f"{own}; {self.memory.status()}" if self.memory is not None and self.config.recall else own

    def _status(self) -> str:
        if not self.config.recall:
            return "off (recall = false in config.toml)"
        model = self.embedder.current()
        server = self.config.embed_model
        missing = bool(server and self.embedder.unavailable)
        why = ("no embed_model set" if not server else f"the embedding model {server} is not available"
               if missing else self.embedder.server_out())
        if not model:
            fix = (f" (`ollama pull {server}` adds recall by meaning)" if missing
                   else " (start it: `ollama serve`)" if why and server else "")
            return f"by words only ({why}){fix}" if why else "by words only"
        behind = self.embedder.behind()
        waiting = f"; {behind:,} passages still to embed (recalled by words until then)" if behind else ""
        instead = f", as {why}" if why and model != server else ""
        return f"by words and meaning ({model}{instead}){waiting}"

    async def ask(self, session: SessionRecord, context: ActiveContext, active: Sequence[MessageRecord],
                  user: MessageRecord) -> Asked | None:
        """What the turn's new message `user` asks (`read`), once a turn; None where recall can
        bring it nothing: no passage of the session lies outside the prompt (or none the
        message may ask of: gate.py), and memory's rules leave it nothing either. That is
        decided on the message's gist (`_gist`); the rest is read only where recall goes on."""
        gist = await self._gist(session, user)
        reaches = self._reaches(session, self._in_prompt(session, context, user), gist)
        return self._whole(gist, active) if reaches or gist.memory_may else None

    async def read(self, session: SessionRecord, context: ActiveContext, active: Sequence[MessageRecord],
                   user: MessageRecord) -> Asked:
        """What the new message `user` asks recall, whole (asked.py)."""
        return self._whole(await self._gist(session, user), active)

    async def _gist(self, session: SessionRecord, user: MessageRecord) -> Asked:
        """What decides whether recall may bring the message anything: its terms, the chat
        log's people it asks about, whether it speaks of the past, memory's rules (which read
        only its own terms and that); what ranking needs besides is left empty (`_whole`)."""
        index = await self.indexes.get(session)
        about_them, writer, question = self._of_a_chat_log(index, user)
        asked = asked_terms(question)
        memory = self.memory
        if memory is not None:
            index.texts.add(hash(user.content.strip()))  # the question is this session's (stored or about to be)
        of_the_past = asking.about_the_past(user.content)
        gist = Query({}, holds=index.texts, own=frozenset(asked),
                     about_past=of_the_past or (memory is not None and await memory.names_people(user.content)))
        return Asked(index, user, about_them, writer, question, asked, {}, False, gist, of_the_past or about_them,
                     memory is not None and await memory.may_bring(gist))

    def _whole(self, gist: Asked, active: Sequence[MessageRecord]) -> Asked:
        """`gist` with what ranking needs too: the query's weighted terms (with the turn
        before's where the message leans on it), whose words it asks about, the time it names."""
        user = gist.user
        leans_back = select.leans_on_last_turn(user.content, len(set(gist.asked)), whole=gist.about_them)
        query = query_terms(gist.asked, self._last_turn(active) if leans_back else "")
        elsewhere = msgspec.structs.replace(gist.elsewhere, terms=query, asks_of=asking.addressed(user.content),
                                            span=when.span(user.content, user.created))
        return msgspec.structs.replace(gist, terms=query, elsewhere=elsewhere,
                                       with_turn_before=leans_back and asking.refers_back(user.content))

    def _reaches(self, session: SessionRecord, in_prompt: set[int], asked: Asked) -> bool:
        """Whether the session's own history may give the message anything: recall is on for
        it, some message lies outside the prompt (`in_prompt`: `_in_prompt`), and the message
        may ask of the past (gate.py)."""
        return self.enabled(session) and session.message_count > len(in_prompt) \
            and gate.may_ask(asked.index, asked.asked, asked.about_past)

    async def recall(self, session: SessionRecord, context: ActiveContext,
                     active: Sequence[MessageRecord], asked: Asked, budget: int,
                     whole: int | None = None, movable: recall_room.Movable = recall_room.NOTHING) -> Recall:
        """What the turn whose new message is `asked` (`ask`) recalls within `budget` tokens:
        from its own history, then from the user's other sessions (memory) within what is
        left of `whole` (default: `budget`). Nothing said after the question is (a regenerated
        turn's: the answers it replaces). When the message reaches into the past, the room
        of the `movable` exchanges is its own too (`Recall.displaced` says which it took)."""
        if budget + movable.tokens < MIN_ROOM:
            return NONE
        index, user, memory = asked.index, asked.user, self.memory
        in_prompt = self._in_prompt(session, context, user)
        reaches = self._reaches(session, in_prompt, asked)
        # the message's vector only where a ranking may use it (a round trip to the embedding model)
        vector = await self._vector(index, active, user, asked.question if asked.about_them and asked.asked else None,
                                    asked.with_turn_before) if reaches or asked.memory_may else None
        own_query = Query(asked.terms, vector, asked.writer or asked.elsewhere.asks_of, span=asked.elsewhere.span,
                          own=asked.elsewhere.own, about_past=asked.about_past, with_turn_before=asked.with_turn_before)
        own, displaced = self.own.passages(session, context, user, index, own_query, in_prompt, budget, movable) \
            if reaches else ([], ())
        model = session.model
        text = select.block(own)
        own_features = select.block_features(index.lines[index.by_seq[p.seq][p.part]] for p in own) \
            if own else ZERO
        used = self.estimator.estimate(model, add(own_features, JOIN)) if own else 0
        remembered: list[Remembered] = []
        memory_note = ""
        if memory is not None:
            room = (budget if whole is None else whole) - used
            if self.config.memory_budget:
                room = min(room, self.config.memory_budget)
            overhead = self.estimator.estimate(model, memory_block.FRAME)
            remembered, memory_note = await bring(
                memory, session, msgspec.structs.replace(asked.elsewhere, vector=vector),
                room, overhead,
                lambda pid, name: self.estimator.estimate(model, memory_block.line_features(memory, pid, name)))
        if not own and not remembered:
            return Recall(cut=memory_note) if memory_note else NONE
        text = "\n".join(filter(None, [memory_block.block(remembered), text]))
        theirs = memory_block.block_features(memory, remembered) if remembered and memory else ZERO
        features = add(theirs, own_features, NEWLINE if remembered and own else ZERO, JOIN)
        return Recall(block=text, passages=tuple(own), tokens=self.estimator.estimate(model, features),
                      features=features, semantic=vector is not None, remembered=tuple(remembered),
                      displaced=displaced, memory_tokens=self.estimator.estimate(model, theirs) if remembered else 0,
                      cut=memory_note)

    @staticmethod
    def _last_turn(active: Sequence[MessageRecord]) -> str:
        """The texts of the exchange before the new message."""
        return "\n".join(m.content for m in active[-2:] if m.role in ("user", "assistant"))

    @staticmethod
    def _of_a_chat_log(index: SessionIndex, user: MessageRecord) -> tuple[bool, str | None, str]:
        """Whether the message comes from outside a chat log and asks about its people
        (speakers.about_them), the role of the one it names (None: no one), and its text
        without that name (what it is searched with: by that writer's words, not the name)."""
        writer = index.speakers.asked_of(user.content)
        return index.speakers.about_them(user.content), writer, index.speakers.unnamed(user.content, writer)

    async def _vector(self, index: SessionIndex, active: Sequence[MessageRecord], user: MessageRecord,
                      whole: str | None = None, with_turn_before: bool = False) -> list[float] | None:
        """The new message's vector (`with_turn_before`: with the question before it; of
        `whole` alone where given: a question that needs nothing before it), if any passage
        here or in memory has one to compare with and it comes in time."""
        memory = self.memory.index if self.memory is not None else None
        wait, started = self.config.recall_embed_wait_ms / 1000, time.monotonic()  # (for both waits)
        await self.embedder.stored(lambda: (index.lexical.passages, index.semantic), wait)
        model = self.embedder.current()
        if not (index.semantic.ids and index.semantic.model == model) and \
                (memory is None or not (memory.semantic.ids and memory.semantic.model == model)):
            return None
        asked = [m.content for m in active[-2:] if m.role == "user"]
        text = whole if whole is not None else "\n".join([*asked, user.content]) \
            if with_turn_before else user.content
        if not has_words(text):  # nothing to compare: a meaning of nothing is near anything
            return None  # a time stamp a front-end wrote into the message says when, not what about
        return await self.embedder.vector(unstamped(text).strip(), max(0.0, wait - (time.monotonic() - started)))

    @staticmethod
    def _in_prompt(session: SessionRecord, context: ActiveContext, user: MessageRecord) -> set[int]:
        """The messages the turn's prompt holds word for word, or that recall must leave out
        (what was said after the question: a regenerated turn's answers)."""
        after = range(user.seq + 1, session.next_seq) if user.seq >= 0 else range(0)
        return {*context.seqs, *session.pending, user.seq, *after}

    def room(self, window: int, reserve: int, raised_prompt: int, cap: int, margin: float) -> int:
        """The tokens recall may take: what the window leaves beside the prompt (raised by
        its possible error) and the reply room, allowing `margin` on the block itself, and
        no more than `cap`."""
        left = window - reserve - raised_prompt
        return max(0, min(cap, math.floor(left / (1 + margin))))

    def forget(self, session_id: str) -> None:
        self.indexes.forget(session_id)

    def prepare(self, session_id: str) -> None:
        """Index a session ahead of its first turn (a new one, an import, a branch), in the
        background."""
        self.indexes.prepare(session_id)

    def stored(self, session_id: str) -> None:
        """Messages were stored: the session's index (when kept) takes them in, memory reads
        them soon."""
        if self.memory is not None:
            self.memory.read_soon()
        self.indexes.stored(session_id)

    async def close(self) -> None:
        """Stop indexing (memory and the embedder are closed by whoever made them)."""
        await self.indexes.close()
