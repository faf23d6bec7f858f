"""The token fit per model: weights for text features, learnt from exact counts so that no
one session, and no odd content, can throw it.

Samples come in three clean kinds: an answer's text against its `eval_count`; a prompt
against its `prompt_eval_count` where the session has no anchor yet; and, where it has
one, what a prompt added since the anchor against the tokens it added. Each sample is
summed into its session's own sums (older samples decayed), and the model's sums are the
sessions' sums with each session's weight capped at `SESSION_CAP` samples: a session
that talks a lot counts as one that talked a little, so no session outvotes the others.
Text dominated by one repeated word calibrates nothing (a real tokenizer spends one token
on a common word however long, so such text says nothing about ordinary text).

The weights solve a ridge regression towards the cautious prior, worth `RIDGE` samples,
within [`LOW`, `HIGH`] times the prior: a feature no sample has shown (a script never
seen, say) keeps its prior weight, so the first estimate of an unseen shape is cautious.
"""

import re
from collections import Counter

from ctxkeep.daemon.store.context_records import Calibration
from ctxkeep.daemon.tokens import FEATURES, IMAGES, PRIOR, Vector, widened

#: The weights stay within these multiples of the prior.
LOW, HIGH = 0.2, 3.0
#: The prior's weight, in samples of a typical message: TYPICAL of each feature (Latin
#: letters, words, other letters, digits, symbols, newlines, spaces, images, messages). A
#: feature seen little (a few digits) cannot move its weight far on its own; an image's
#: cost is one number per model, so the first exact counts of images reveal it.
RIDGE = 2.0
TYPICAL = (200.0, 40.0, 20.0, 10.0, 20.0, 5.0, 40.0, 0.25, 1.0)
#: A part of an estimate is covered by calibration once the samples held this many times
#: as much of each of its features; an uncovered part is allowed the uncalibrated margin.
COVERED = 3.0
#: Older samples of a session weigh less, so its fit follows what it talks about.
DECAY = 0.99
#: The most samples one session weighs in its model's fit.
SESSION_CAP = 24.0
#: The stored format (records of other versions are not used).
VERSION = 2
_WORD = re.compile(r"[A-Za-z]+")


def repetitive(text: str) -> bool:
    """Whether one word makes up half of a text's words (eight or more of them)."""
    words = _WORD.findall(text.lower())
    if len(words) < 8:
        return False
    return Counter(words).most_common(1)[0][1] * 2 >= len(words)


def empty() -> Calibration:
    return Calibration(xtx=[[0.0] * FEATURES for _ in range(FEATURES)], xty=[0.0] * FEATURES,
                       version=VERSION)


def usable(stored: Calibration | None) -> Calibration:
    """A stored record of this version (one from before images were counted widened, no
    image seen), else a fresh one."""
    if stored is None or stored.version != VERSION or widened(stored.xty) is None:
        return empty()
    if len(stored.xty) < FEATURES:
        rows = [widened(row) or () for row in stored.xtx]
        zero = [0.0] * (FEATURES - 1)
        stored.xtx = [list(r) for r in [*rows[:IMAGES], widened(zero) or (), *rows[IMAGES:]]]
        stored.xty = list(widened(stored.xty) or ())
        stored.mass = list(widened(stored.mass) or ()) if stored.mass else []
    return stored


def capped(sums: Calibration) -> tuple[list[list[float]], list[float], float]:
    """A session's sums scaled to weigh at most SESSION_CAP samples."""
    k = min(1.0, SESSION_CAP / sums.samples) if sums.samples > 0 else 0.0
    return [[x * k for x in row] for row in sums.xtx], [y * k for y in sums.xty], sums.samples * k


def learn(session: Calibration, model: Calibration, samples: list[tuple[Vector, int]]) -> None:
    """Add samples to a session's sums and move the model's sums by what changed."""
    if not samples:
        return
    old_xtx, old_xty, old_n = capped(session)
    old_n_raw = session.samples
    old_mass = list(session.mass) if session.mass else [0.0] * FEATURES
    session.mass = list(old_mass)
    for features, tokens in samples:
        for i in range(FEATURES):
            session.mass[i] = session.mass[i] * DECAY + abs(features[i])
            session.xty[i] = session.xty[i] * DECAY + features[i] * tokens
            for j in range(FEATURES):
                session.xtx[i][j] = session.xtx[i][j] * DECAY + features[i] * features[j]
        session.samples = session.samples * DECAY + 1.0
    new_xtx, new_xty, new_n = capped(session)
    k_old = min(1.0, SESSION_CAP / max(old_n_raw, 1e-9)) if old_n_raw > 0 else 0.0
    k_new = min(1.0, SESSION_CAP / session.samples)
    if not model.mass:
        model.mass = [0.0] * FEATURES
    for i in range(FEATURES):
        model.mass[i] += session.mass[i] * k_new - old_mass[i] * k_old
        model.xty[i] += new_xty[i] - old_xty[i]
        for j in range(FEATURES):
            model.xtx[i][j] += new_xtx[i][j] - old_xtx[i][j]
    model.samples += new_n - old_n
    model.observations += len(samples)


def fit(model: Calibration) -> list[float]:
    """The weights: ridge towards PRIOR, within [LOW, HIGH] × PRIOR. Solved exactly, then
    each weight out of its bounds (the worst first) is held at its bound and the rest
    solved again (an active set; at most one pass per feature)."""
    if model.samples <= 0:
        return list(PRIOR)
    ridge = [RIDGE * t * t for t in TYPICAL]
    a = [[model.xtx[i][j] + (ridge[i] if i == j else 0.0) for j in range(FEATURES)]
         for i in range(FEATURES)]
    b = [model.xty[i] + ridge[i] * PRIOR[i] for i in range(FEATURES)]
    held: dict[int, float] = {}
    while True:
        free = [i for i in range(FEATURES) if i not in held]
        rhs = [b[i] - sum(a[i][j] * v for j, v in held.items()) for i in free]
        solved = dict(zip(free, _solve([[a[i][j] for j in free] for i in free], rhs)))
        worst, excess = -1, 0.0
        for i, value in solved.items():
            bound = min(HIGH * PRIOR[i], max(LOW * PRIOR[i], value))
            if abs(value - bound) / PRIOR[i] > excess:
                worst, excess = i, abs(value - bound) / PRIOR[i]
        if worst < 0:
            return [held[i] if i in held else solved[i] for i in range(FEATURES)]
        held[worst] = min(HIGH * PRIOR[worst], max(LOW * PRIOR[worst], solved[worst]))


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
    return [m[i][n] / m[i][i] if abs(m[i][i]) > 1e-12 else 0.0 for i in range(n)]


#: Relative errors kept for the margin, and the margin before there are enough.
ERRORS_KEPT = 32
MIN_ERRORS = 8
UNCALIBRATED_MARGIN = 0.25
MIN_MARGIN = 0.04
MAX_MARGIN = 0.5
#: The margin is the largest recent error and this much more: a prompt that does not fit
#: beside its answer loses text, so a percentile (one turn in twenty over it) is not enough.
SAFETY = 1.5


def uncovered(model: Calibration, weights: list[float], delta: Vector) -> float:
    """Tokens of the part of `delta` whose features the samples have seen too little of."""
    mass = model.mass if len(model.mass) == FEATURES else [0.0] * FEATURES
    return sum(w * abs(d) for w, d, m in zip(weights, delta, mass) if m < COVERED * abs(d))


def margin(model: Calibration) -> float:
    """The relative error to allow for on an estimated part: the largest of the recent
    ones, with SAFETY to spare."""
    if len(model.errors) < MIN_ERRORS:
        return UNCALIBRATED_MARGIN
    return min(MAX_MARGIN, max(MIN_MARGIN, SAFETY * max(model.errors)))
