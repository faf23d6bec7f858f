"""How full a session's context is: segments, the conversation's budget, reliability."""

from dataclasses import dataclass

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context import reliability
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.prompt import checkpoint_block
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.tokens import part_features
from ctxkeep.protocol.structs import Segments, Usage


@dataclass(frozen=True)
class Budget:
    """The conversation's budget (window less reply room, system prompt, goals, pins and
    checkpoints), in estimated tokens."""

    window: int
    reply: int
    system: int
    goals: int
    pinned: int
    checkpoints: int
    files: int
    summaries: int
    conversation: int
    #: The estimate's possible error (context/estimator.py `allowance`): 0 when the whole
    #: prompt is the session's last exact count.
    allowance: int = 0
    #: Kept free for recall (config `recall_share`), so the active context leaves it room.
    reserved: int = 0

    @property
    def available(self) -> int:
        """window − reply room − system − goals/pins − checkpoints − recall's share."""
        return max(1, self.window - self.reply - self.system - self.goals - self.pinned
                   - self.checkpoints - self.reserved)

    @property
    def fill(self) -> float:
        """The conversation's share of its budget."""
        return self.conversation / self.available

    @property
    def lowered_fill(self) -> float:
        """The fill with the conversation lowered by the estimate's possible error."""
        return max(0.0, self.conversation - self.allowance) / self.available

    @property
    def total(self) -> int:
        return self.system + self.goals + self.pinned + self.checkpoints + self.conversation


def reply_room(config: Config, session: SessionRecord) -> int:
    """The room kept for the answer in every prompt: `reply_reserve_tokens`, at most an
    eighth of the window, and no more than the session's own num_predict allows its answers
    (what an answer cannot use is recall's and the conversation's)."""
    room = min(config.reply_reserve_tokens, session.window // 8)
    own = session.options.get("num_predict")
    return min(room, own) if isinstance(own, int) and not isinstance(own, bool) and own > 0 else room


def measure(session: SessionRecord, context: ActiveContext, active: list[MessageRecord],
            estimator: Estimator, config: Config, recall_read: int | None = None) -> Budget:
    """The budget of a session's context as it stands (folded on from the session's last
    measure when the context only grew: context/fold.py). The segments are estimates,
    scaled so that together they make the anchored estimate of the whole prompt (exact
    when nothing changed since the last count); its possible error is the conversation's.
    Recall's reserved share is at most `recall_read`, the most its block may take on this
    machine (Speeds.reads_in): room kept for a block that cannot come is room compaction
    would free for nothing."""
    model = session.model
    key = (session.id, frozenset(context.pinned), frozenset(context.file_summaries), session.vision)
    parts = estimator.segmented.fold(session.id, key, active)
    size = lambda vector: estimator.estimate(model, vector)
    goals_text = goal_markers.render(context.goals)
    fixed = {"system": estimator.message(model, session.system) + 1 if session.system else 1,
             "goals": size(part_features(goals_text)) if goals_text else 0,
             "pinned": size(parts.pinned),
             "checkpoints": size(part_features(checkpoint_block(context.checkpoints)))
             if context.checkpoints else 0}
    rest = {"files": size(parts.files), "summaries": size(parts.summaries), "recent": size(parts.recent)}
    whole = estimator.context_estimate(session, context, active)
    estimated = sum(fixed.values()) + sum(rest.values())
    if estimated and whole.tokens != estimated:
        k = whole.tokens / estimated
        fixed = {name: round(v * k) for name, v in fixed.items()}
        rest = {name: round(v * k) for name, v in rest.items()}
    reply = reply_room(config, session)
    recalling = config.recall if session.recall is None else session.recall
    reserved = int(config.recall_share * max(0, session.window - reply - sum(fixed.values()))) if recalling else 0
    allowance = estimator.allowance(model, whole)
    if recall_read is not None:  # the block, and what the prompt's possible error may take beside it
        reserved = min(reserved, recall_read + allowance)
    return Budget(window=session.window, reply=reply, **fixed,
                  files=rest["files"], summaries=rest["summaries"],
                  conversation=sum(rest.values()), allowance=allowance, reserved=reserved)


def usage_of(session: SessionRecord, context: ActiveContext, active: list[MessageRecord],
             estimator: Estimator, config: Config, recall_read: int | None = None) -> Usage:
    """The session's usage: its count as recorded — Ollama's exact count of the last
    prompt, or the estimate recorded when the prompt last changed (`exact: false`).

    Segments are estimates, scaled to add up to the count.
    """
    b = measure(session, context, active, estimator, config, recall_read)
    seg = Segments(system=b.system, pinned=b.goals + b.pinned, files=b.files,
                   summaries=b.checkpoints + b.summaries, recent=max(0, b.conversation - b.files - b.summaries))
    parts = ("system", "pinned", "files", "summaries", "recent")
    estimated = sum(getattr(seg, p) for p in parts)
    count = session.count
    recorded = count.tokens > 0 or not active
    exact = count.exact and count.tokens > 0
    tokens = count.tokens if recorded else estimated
    # the last prompt's exact count held its recall block; an estimate since does not
    recalled = min(count.recalled, tokens) if exact else 0
    if recorded and estimated:
        factor = (tokens - recalled) / estimated
        scaled = {p: round(getattr(seg, p) * factor) for p in parts}
        scaled["recent"] = max(0, scaled["recent"] + tokens - recalled - sum(scaled.values()))
        seg = Segments(**scaled, recalled=recalled)
    window = session.window
    return Usage(tokens=tokens, window=window, fill=tokens / window if window else 0.0,
                 exact=exact, next_tokens=count.next_prompt if recorded else tokens, segments=seg, messages=len(active), budget=b.available,
                 budget_fill=round(b.fill, 4),
                 reliability=round(reliability.score(session.parameter_size, session.compactions), 4),
                 cached_tokens=count.cached if count.cached >= 0 and exact else None,
                 cache_hit_rate=session.cache.hit_rate)
