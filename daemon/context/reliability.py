"""The reliability score (how far the model may be trusted with what it was told): by
model size, and 15 % less per compaction (floor 30 %)."""

import re
from functools import lru_cache

WARNING_BELOW = 0.40
#: Compactions before the warning may be given: a small model's score is low from its first
#: compaction, and a conversation four turns old has lost nothing worth a warning.
WARN_AFTER = 3
ADVICE = ("Small models may lose context accuracy after several compressions. "
          "Recommendations: continue if you are making good progress; start a new "
          "conversation if you see hallucinations; use a larger model for complex long-term tasks.")


@lru_cache(maxsize=256)
def billions(parameter_size: str) -> float:
    """"7.6B" -> 7.6, "137M" -> 0.137, unknown -> 0."""
    m = re.match(r"\s*([\d.]+)\s*([BMK]?)", parameter_size or "", re.I)
    if not m:
        return 0.0
    value = float(m.group(1))
    return value * {"B": 1.0, "M": 1e-3, "K": 1e-6, "": 1.0}[m.group(2).upper()]


def model_factor(parameter_size: str) -> float:
    """The factor by model size; 1.0 while the size is not known yet (before the
    model's first use), so an unknown model is not reported unreliable."""
    if not parameter_size:
        return 1.0
    size = billions(parameter_size)
    if size >= 70:
        return 0.95
    if size >= 30:
        return 0.85
    if size >= 13:
        return 0.70
    if size >= 7:
        return 0.50
    return 0.30


def score(parameter_size: str, compactions: int, context_confidence: float = 1.0) -> float:
    """modelFactor × max(1 − 0.15 × compactions, 0.30) × contextConfidence once the
    conversation has been compacted; 1.0 before (the score describes what
    compressions do: a conversation the model sees whole has lost nothing)."""
    if compactions <= 0:
        return 1.0 * context_confidence
    return model_factor(parameter_size) * max(1.0 - 0.15 * compactions, 0.30) * context_confidence


def warns(parameter_size: str, compactions: int) -> bool:
    """Whether a conversation compacted `compactions` times is one to warn about."""
    return compactions >= WARN_AFTER and score(parameter_size, compactions) < WARNING_BELOW


def warning(model: str, compactions: int) -> str:
    return (f"Context compression warning: {model} has compacted this conversation "
            f"{compactions} time(s). {ADVICE}")
