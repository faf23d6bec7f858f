"""Token estimates calibrated, per model, from the exact counts Ollama reports.

Ollama counts tokens only for what it is sent. To plan before sending (will
this prompt fit? how much would a compaction free?), the daemon estimates
from text features — letters, words, digits and symbols, whitespace, and a
per-message template cost — with weights fitted by least squares to every
exact count it has seen: each turn's `prompt_eval_count` against the prompt's
features, and each answer's `eval_count` against the answer's. Until a model
has an exact count the weights are chars/4 (the fit is ridge-regularised
towards that prior, so a few observations cannot throw it far off). Prose and
code cost different tokens per character; the features let one fit serve both.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from .records import Calibration
from .store import Store

#: letters, words, digits and symbols, whitespace, messages
FEATURES = 5
PRIOR = (0.25, 0.0, 0.25, 0.25, 0.0)  # exactly chars/4
_RIDGE = 1.0
#: Older observations weigh less, so the fit follows what a session talks about.
_DECAY = 0.995
_LETTERS = re.compile(r"[^\W\d_]")
_WORDS = re.compile(r"[^\W\d_]+")
_SPACE = re.compile(r"\s")

Vector = tuple[float, ...]


@lru_cache(maxsize=1 << 16)
def text_features(text: str) -> Vector:
    """Features of a text, without any per-message cost (cached: messages never change,
    and the budget is measured after every turn)."""
    letters = len(_LETTERS.findall(text))
    words = len(_WORDS.findall(text))
    space = len(_SPACE.findall(text))
    symbols = len(text) - letters - space
    return (float(letters), float(words), float(symbols), float(space), 0.0)


def add(a: Vector, b: Vector) -> Vector:
    return tuple(x + y for x, y in zip(a, b))


def prompt_features(messages: Iterable[Mapping[str, str]]) -> Vector:
    """Features of a chat prompt: every message's text plus one template cost each,
    and one more for the assistant turn the prompt opens."""
    total: Vector = (0.0, 0.0, 0.0, 0.0, 1.0)
    for message in messages:
        total = add(total, add(text_features(message.get("content", "")), (0, 0, 0, 0, 1.0)))
    return total


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

    def __init__(self, store: Store) -> None:
        self.store = store
        self._weights: dict[str, list[float]] = {}
        self._sums: dict[str, Calibration] = {}

    def _calibration(self, model: str) -> Calibration:
        if model not in self._sums:
            self._sums[model] = self.store.calibration(model) or Calibration(
                xtx=[[0.0] * FEATURES for _ in range(FEATURES)], xty=[0.0] * FEATURES)
        return self._sums[model]

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
        return max(0, round(w[0] * features[0] + w[1] * features[1] + w[2] * features[2]
                            + w[3] * features[3] + w[4] * features[4]))

    def text(self, model: str, text: str) -> int:
        return self.estimate(model, text_features(text))

    def prompt(self, model: str, messages: Sequence[Mapping[str, str]]) -> int:
        return self.estimate(model, prompt_features(messages))

    def message(self, model: str, content: str) -> int:
        """One message inside a prompt: its text and its template cost."""
        f = text_features(content)
        return self.estimate(model, (f[0], f[1], f[2], f[3], 1.0))

    def observe(self, model: str, samples: Iterable[tuple[Vector, int]]) -> None:
        """Fit to exact counts: (features, tokens) pairs. Persisted in one write."""
        cal = self._calibration(model)
        for features, tokens in samples:
            if tokens <= 0:
                continue
            for i in range(FEATURES):
                cal.xty[i] = cal.xty[i] * _DECAY + features[i] * tokens
                for j in range(FEATURES):
                    cal.xtx[i][j] = cal.xtx[i][j] * _DECAY + features[i] * features[j]
            cal.observations += 1
        self._weights.pop(model, None)
        self.store.save_calibration(model, cal)
