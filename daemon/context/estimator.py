"""Token estimates: exact where a count is known, calibrated where it is not.

Ollama counts tokens only for what it is sent. To plan before sending (will this prompt
fit? how much would a compaction free?), the daemon estimates — but as little as it can:

- **Anchored**: a session's last exact count is exact for the prompt it counted. A later
  prompt is that count plus the estimate of what changed since (the difference of the two
  prompts' features: the answer and the new question, or what a compaction took out and
  put in). Only that difference is uncertain, so a prompt that did not change is exact,
  and another session's content cannot move it.
- **Calibrated**: text is estimated from its features (Latin letters and words, other
  scripts, digits, symbols, newlines, spaces, and a template cost per message) with
  weights fitted per model to exact counts (context/calibration.py: per-session capped,
  bounded, cautious where nothing was seen).
- **Margins**: every estimate's estimated part is compared with the exact count that
  follows; `margin` is the 95th percentile of those relative errors (25 % until a model
  has a few). What must fit is checked with the estimate raised by the margin on its
  uncertain part; what would trigger a lossy compaction, with it lowered.
"""

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxkeep.daemon.context import calibration as fitting
from ctxkeep.daemon.context.features import (
    ZERO,
    FeatureCache,
    Folded,
    Segmented,
    Vector,
    context_features,
    fold_step,
    prompt_features,
    segment_step,
    text_features,
)
from ctxkeep.daemon.context.fold import PrefixFold
from ctxkeep.daemon.context.prompt import system_parts
from ctxkeep.daemon.store.context_records import ActiveContext, Calibration
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.tokens import widened

PRIOR = fitting.PRIOR
#: Tokens added to every raised estimate (a short text's error is in tokens, not percent).
SLACK = 16
#: An estimate's error counts towards the margin once this much of it was estimated.
MIN_UNCERTAIN = 32


@dataclass(frozen=True)
class Estimate:
    """A prompt's size: the best guess, how much of it is estimated (the rest is an exact
    count), and how much of that is of features calibration has seen too little of."""

    tokens: int
    uncertain: int
    novel: int = 0


def session_key(model: str, session_id: str) -> str:
    """Where a session's own sums for a model are kept."""
    return f"{model}\0{session_id}"


class Estimator:
    """Per-model weights and margins, kept in the store so calibration survives restarts."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._weights: dict[str, list[float]] = {}
        self._sums: dict[str, Calibration] = {}
        #: Stored messages' features, so that a turn never re-reads a text it has seen.
        self.features = FeatureCache()
        #: Each session's prompt features, folded on as its context grows (context/fold.py).
        self.folded: PrefixFold[Folded] = PrefixFold(Folded, fold_step(self.features))
        #: Each session's budget segments (context/usage.py `measure`), folded the same way.
        self.segmented: PrefixFold[Segmented] = PrefixFold(Segmented, segment_step(self.features))

    # -- the fit ---------------------------------------------------------------------

    def _calibration(self, key: str) -> Calibration:
        if key not in self._sums:
            self._sums[key] = fitting.usable(self.store.caches.calibration(key))
        return self._sums[key]

    def weights(self, model: str) -> list[float]:
        if model not in self._weights:
            self._weights[model] = fitting.fit(self._calibration(model))
        return self._weights[model]

    def margin(self, model: str) -> float:
        """The relative error to allow for on an estimate's uncertain part."""
        return fitting.margin(self._calibration(model))

    def calibrated(self, model: str) -> bool:
        """Whether any exact count of this model has been learnt."""
        return self._calibration(model).observations > 0

    # -- text ------------------------------------------------------------------------

    def estimate(self, model: str, features: Vector) -> int:
        """Tokens for the given features, never negative."""
        w = self.weights(model)
        return max(0, round(sum(map(operator.mul, w, features))))  # (map: twice a generator's speed)

    def text(self, model: str, text: str) -> int:
        return self.estimate(model, text_features(text))

    def prompt(self, model: str, messages: Sequence[Mapping[str, str]]) -> int:
        return self.estimate(model, prompt_features(messages))

    def message(self, model: str, content: str) -> int:
        """One message inside a prompt: its text and its template cost."""
        return self.estimate(model, text_features(content)[:-1] + (1.0,))

    # -- a session's prompt ----------------------------------------------------------

    def context_features(self, session: SessionRecord, context: ActiveContext,
                         active: Sequence[MessageRecord], user: MessageRecord | None = None) -> Vector:
        """Features of the prompt `prompt.context_messages` (with `user`: `build_messages`)
        would build, summed from the messages' cached features."""
        return context_features(self.features, session, system_parts(session, context), context,
                                active, user, self.folded)

    def of_features(self, session: SessionRecord, features: Vector, recall: Vector = ZERO) -> Estimate:
        """The estimate of a prompt of this session with these features (and a recall
        block of `recall`'s): anchored on the session's last exact count when it has one
        for its model. The anchored prompt's own recall block is taken out and the new one
        put in, each estimated whole (two different texts, however alike their features)."""
        w = self.weights(session.model)
        calibration = self._calibration(session.model)
        # an anchor counted for another model (the session's model was changed since) says nothing
        anchor = widened(session.anchor.features) if session.anchor.model == session.model else None
        old = (widened(session.anchor.recall) or ZERO) if anchor is not None else ZERO
        delta = features if anchor is None else tuple(map(operator.sub, features, map(operator.sub, anchor, old)))
        cost = lambda v: sum(map(operator.mul, w, map(abs, v))) if any(v) else 0.0
        tokens = ((session.anchor.tokens - cost(old)) if anchor is not None else 0) \
            + sum(map(operator.mul, w, delta)) + cost(recall)
        uncertain = math.ceil(cost(delta) + cost(old) + cost(recall))
        novel = math.ceil(sum(fitting.uncovered(calibration, w, v) for v in (delta, old, recall) if any(v)))
        return Estimate(max(0, round(tokens)), uncertain, min(novel, uncertain))

    def unanchored(self, model: str, features: Vector) -> Estimate:
        """The estimate of a prompt with these features from the model's weights alone (no
        session's exact count to start from: a prompt unlike the session's own)."""
        w = self.weights(model)
        cost = sum(map(operator.mul, w, map(abs, features)))
        novel = math.ceil(fitting.uncovered(self._calibration(model), w, features))
        return Estimate(self.estimate(model, features), math.ceil(cost), min(novel, math.ceil(cost)))

    def context_estimate(self, session: SessionRecord, context: ActiveContext,
                         active: Sequence[MessageRecord], user: MessageRecord | None = None) -> Estimate:
        return self.of_features(session, self.context_features(session, context, active, user))

    def context(self, session: SessionRecord, context: ActiveContext,
                active: Sequence[MessageRecord], user: MessageRecord | None = None) -> int:
        """The best guess of that prompt's tokens."""
        return self.context_estimate(session, context, active, user).tokens

    def allowance(self, model: str, estimate: Estimate) -> int:
        """The error to allow for: the measured margin on the estimated part, the cautious
        one on its part of features calibration has seen too little of."""
        known = estimate.uncertain - estimate.novel
        return math.ceil(known * self.margin(model) + estimate.novel * fitting.UNCALIBRATED_MARGIN)

    def raised(self, model: str, estimate: Estimate | int) -> int:
        """The estimate raised by its allowance (a bare number is all uncertain and novel),
        and a few tokens more: what must fit is checked with this."""
        est = estimate if isinstance(estimate, Estimate) else Estimate(estimate, estimate, estimate)
        return est.tokens + self.allowance(model, est) + SLACK

    def lowered(self, model: str, estimate: Estimate) -> int:
        """The estimate lowered by its allowance: what may trigger a lossy step."""
        return max(0, estimate.tokens - self.allowance(model, estimate))

    # -- learning --------------------------------------------------------------------

    def observe(self, session: SessionRecord, features: Vector, tokens: int, estimate: Estimate,
                texts: Iterable[tuple[str, int]] = (), repeated: bool = False
                ) -> list[tuple[str, Calibration]]:
        """Learn from a turn of `session`: its prompt's features and exact count (and how far
        `estimate`, made before, was off), and exact (text, tokens) pairs such as the answer.
        `repeated`: the prompt's new part is text that calibrates nothing (`repetitive`).
        Returns the records to store (with the answer, in one transaction)."""
        model = session.model
        totals = self._calibration(model)
        own = self._calibration(session_key(model, session.id))
        if tokens > 0 and estimate.uncertain >= MIN_UNCERTAIN and totals.observations >= 2:
            error = abs(estimate.tokens - tokens) / estimate.uncertain
            totals.errors = [*totals.errors, error][-fitting.ERRORS_KEPT:]
        samples = [(f, n) for f, n in [*self._prompt_sample(session, features, tokens, repeated),
                                        *((text_features(t), n) for t, n in texts
                                          if not fitting.repetitive(t))] if n > 0]
        fitting.learn(own, totals, samples)
        self._weights.pop(model, None)
        return [(model, totals), (session_key(model, session.id), own)]

    @staticmethod
    def _prompt_sample(session: SessionRecord, features: Vector, tokens: int,
                       repeated: bool) -> list[tuple[Vector, int]]:
        """The prompt as a sample: what it added since the anchor when the context only
        grew (and the anchored prompt recalled nothing), else the whole prompt."""
        if repeated:
            return []
        anchor = widened(session.anchor.features) or ()
        clean = (session.anchor.model == session.model and bool(anchor)
                 and not any(session.anchor.recall))
        delta = tuple(f - a for f, a in zip(features, anchor)) if clean else ()
        if delta and min(delta) >= 0 and tokens > session.anchor.tokens:
            return [(delta, tokens - session.anchor.tokens)]
        return [(features, tokens)]

    def save(self, records: list[tuple[str, Calibration]]) -> None:
        """Store calibration records now (outside a turn's own transaction)."""
        for key, record in records:
            self.store.caches.save_calibration(key, record)
