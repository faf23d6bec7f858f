"""How full a session's context is, split by segment."""

from ..protocol.models import Segments, Usage
from .estimator import Estimator
from .records import MessageRecord, SessionRecord


def segments(session: SessionRecord, active: list[MessageRecord], estimator: Estimator) -> Segments:
    """Estimated tokens of each part of the active context."""
    model = session.model
    summaries = recent = files = 0
    for m in active:
        tokens = estimator.message(model, m.content)
        if m.kind == "summary":
            summaries += tokens
        else:
            recent += tokens
        files += sum(estimator.text(model, f.block) for f in m.files)
    system = estimator.message(model, session.system) if session.system else 0
    return Segments(system=system, files=files, summaries=summaries, recent=recent)


def usage_of(session: SessionRecord, active: list[MessageRecord], estimator: Estimator) -> Usage:
    """The session's usage: the exact count when there is one, else the estimate.

    Segments are estimates; with an exact total they are scaled to add up to it.
    """
    seg = segments(session, active, estimator)
    parts = ("system", "pinned", "files", "summaries", "recent")
    estimated = sum(getattr(seg, p) for p in parts)
    exact = session.tokens_exact and session.token_count > 0
    tokens = session.token_count if session.token_count or not active else estimated
    if exact and estimated:
        factor = tokens / estimated
        scaled = {p: round(getattr(seg, p) * factor) for p in parts}
        scaled["recent"] = max(0, scaled["recent"] + tokens - sum(scaled.values()))  # rounding
        seg = Segments(**scaled)
    window = session.window
    return Usage(tokens=tokens, window=window, fill=tokens / window if window else 0.0,
                 exact=exact, segments=seg, messages=len(active))
