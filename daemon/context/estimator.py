"""Token estimates calibrated, per model, from the exact counts Ollama reports.

Ollama counts tokens only for what it is sent. To plan before sending (will
this prompt fit? how much would a compaction free?), the daemon estimates
from text features with weights fitted by least squares to every exact count
it has seen: each turn's `prompt_eval_count` against the prompt's features,
and each answer's `eval_count` against the answer's. The features separate
what costs tokens differently in every tokenizer — Latin letters and words
(prose), other scripts, digits, symbols (code, structured data), newlines,
spaces, and a per-message template cost — so one fit serves every kind of
content. Until a model has an exact count the weights are a prior (the fit
is ridge-regularised towards it, so a few observations cannot throw it far).

Every prompt's estimate is compared with its exact count before the count is
learnt; `margin` is the 95th percentile of the recent relative errors (25 %
until a model has a few counts). Whatever must fit is checked with the
estimate raised by that margin; whatever would trigger a lossy compaction,
with the estimate lowered by it.
"""

import math
from collections.abc import Iterable, Mapping, Sequence

from ctxkeep.daemon.context.features import (
    FEATURES, FeatureCache, Folded, Segmented, Vector, context_features, fold_step,
    prompt_features, segment_step, text_features,
)
from ctxkeep.daemon.context.fold import PrefixFold
from ctxkeep.daemon.context.prompt import system_parts
from ctxkeep.daemon.store.records import ActiveContext, Calibration, MessageRecord, SessionRecord
from ctxkeep.daemon.store.protocol import SessionStore

#: A cautious prior: above most tokenizers on every kind of text until the first exact count.
PRIOR = (0.25, 0.5, 1.0, 1.0, 1.0, 1.0, 0.1, 6.0)
_RIDGE = 1.0
#: Older observations weigh less, so the fit follows what a session talks about.
_DECAY = 0.995
#: Relative errors kept for the margin, and the margin before there are enough.
_ERRORS_KEPT = 64
_MIN_ERRORS = 3
#: Observations (turns and answers) before an estimate's error counts towards the margin.
_FITTED = 2
_UNCALIBRATED_MARGIN = 0.25
_MIN_MARGIN = 0.02
#: Tokens added to every raised estimate.
SLACK = 16


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve a·x = b (small, symmetric positive definite) by Gaussian elimination."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-12:
            continue
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    return [m[i][n] / m[i][i] if abs(m[i][i]) > 1e-12 else PRIOR[i] for i in range(n)]


class Estimator:
    """Per-model weights, kept in the store so calibration survives restarts."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._weights: dict[str, list[float]] = {}
        self._sums: dict[str, Calibration] = {}
        #: Stored messages' features, so that a turn never re-reads a text it has seen.
        self.features = FeatureCache()
        #: Each session's prompt features, folded on as its context grows (context/fold.py).
        self.folded: PrefixFold[Folded] = PrefixFold(Folded, fold_step(self.features))
        #: Each session's budget segments (context/usage.py `measure`), folded the same way.
        self.segmented: PrefixFold[Segmented] = PrefixFold(Segmented, segment_step(self.features))

    def _calibration(self, model: str) -> Calibration:
        if model not in self._sums:
            stored = self.store.calibration(model)
            if stored is None or len(stored.xty) != FEATURES:  # none yet, or older features
                stored = Calibration(xtx=[[0.0] * FEATURES for _ in range(FEATURES)],
                                     xty=[0.0] * FEATURES)
            self._sums[model] = stored
        return self._sums[model]

    def margin(self, model: str) -> float:
        """The relative error to allow for: p95 of the recent prompt estimates' errors."""
        errors = self._calibration(model).errors
        if len(errors) < _MIN_ERRORS:
            return _UNCALIBRATED_MARGIN
        ranked = sorted(errors)
        return min(0.5, max(_MIN_MARGIN, ranked[min(len(ranked) - 1, int(0.95 * len(ranked)))]))

    def raised(self, model: str, estimate: int) -> int:
        """An estimate raised by the measured error and a few tokens more (a short prompt's
        error is in tokens, not percent): what must fit is checked with this."""
        return math.ceil(estimate * (1 + self.margin(model))) + SLACK

    def calibrated(self, model: str) -> bool:
        """Whether any exact count of this model has been seen."""
        return self._calibration(model).observations > 0

    def weights(self, model: str) -> list[float]:
        if model not in self._weights:
            cal = self._calibration(model)
            if not cal.observations:
                self._weights[model] = list(PRIOR)
            else:
                # Ridge towards the prior, scaled to the data so it matters only when data is thin.
                scale = _RIDGE * max(1.0, max(cal.xtx[i][i] for i in range(FEATURES)) * 1e-6)
                a = [[cal.xtx[i][j] + (scale if i == j else 0.0) for j in range(FEATURES)]
                     for i in range(FEATURES)]
                b = [cal.xty[i] + scale * PRIOR[i] for i in range(FEATURES)]
                self._weights[model] = _solve(a, b)
        return self._weights[model]

    def estimate(self, model: str, features: Vector) -> int:
        """Tokens for the given features, never negative."""
        w = self.weights(model)
        return max(0, round(sum(wi * fi for wi, fi in zip(w, features))))

    def text(self, model: str, text: str) -> int:
        return self.estimate(model, text_features(text))

    def prompt(self, model: str, messages: Sequence[Mapping[str, str]]) -> int:
        return self.estimate(model, prompt_features(messages))

    def message(self, model: str, content: str) -> int:
        """One message inside a prompt: its text and its template cost."""
        return self.estimate(model, text_features(content)[:-1] + (1.0,))

    def context_features(self, session: SessionRecord, context: ActiveContext,
                         active: Sequence[MessageRecord], user: MessageRecord | None = None) -> Vector:
        """Features of the prompt `prompt.context_messages` (with `user`: `build_messages`)
        would build, summed from the messages' cached features."""
        return context_features(self.features, session, system_parts(session, context), context,
                                active, user, self.folded)

    def context(self, session: SessionRecord, context: ActiveContext,
                active: Sequence[MessageRecord], user: MessageRecord | None = None) -> int:
        """The estimate of that prompt."""
        return self.estimate(session.model, self.context_features(session, context, active, user))

    def observe(self, model: str, prompt: Vector, prompt_tokens: int,
                estimate: int, texts: Iterable[tuple[str, int]] = (), persist: bool = True
                ) -> Calibration:
        """Learn from a turn: its prompt's features and exact count (and how far `estimate`, made
        before, was off) and (text, tokens) pairs such as the answer. Returns the new
        calibration; with `persist` it is also written (else the caller writes it, e.g.
        in the transaction that stores the answer)."""
        cal = self._calibration(model)
        if prompt_tokens > 0 and cal.observations >= _FITTED:  # the prior's error says nothing
            cal.errors = [*cal.errors, abs(estimate - prompt_tokens) / prompt_tokens][-_ERRORS_KEPT:]
        samples = [(prompt, prompt_tokens)]
        samples += [(text_features(text), tokens) for text, tokens in texts]
        for features, tokens in samples:
            if tokens <= 0:
                continue
            for i in range(FEATURES):
                cal.xty[i] = cal.xty[i] * _DECAY + features[i] * tokens
                for j in range(FEATURES):
                    cal.xtx[i][j] = cal.xtx[i][j] * _DECAY + features[i] * features[j]
            cal.observations += 1
        self._weights.pop(model, None)
        if persist:
            self.store.save_calibration(model, cal)
        return cal
