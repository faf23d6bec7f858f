"""What a prompt may be: refused when it cannot fit, and the room it leaves for the answer
(the mixin `Generations` checks its turns with)."""

import msgspec

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.autocompact import AutoCompactor
from ctxkeep.daemon.context.estimator import Estimate, Estimator
from ctxkeep.daemon.context.usage import reply_room
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.store.records import ActiveContext, MessageRecord, SessionRecord
from ctxkeep.protocol import ErrorCode


def more_room(session: SessionRecord) -> str:
    """How to get a larger window, or that there is none to get with this model."""
    limit = session.context_length
    if limit and session.window >= limit:
        return (f"use a model with a longer context: {session.model}'s whole context length "
                f"({limit:,} tokens) is in use")
    upto = f" (up to {limit:,}, {session.model}'s context length)" if limit else ""
    return f"raise num_ctx{upto}: `ctxkeep set {session.name} --num-ctx N`"


class TurnLimits:
    """Needs `store`, `estimator`, `config` and `auto`."""

    store: Store
    estimator: Estimator
    config: Config
    auto: AutoCompactor

    def _refuse_impossible(self, session: SessionRecord, context: ActiveContext,
                           user: MessageRecord) -> None:
        """Refuse a question that cannot fit however much is compacted: the system prompt,
        goals, pins and the question itself, plus the reply room, over the window."""
        floor_context = msgspec.structs.replace(context, seqs=[], checkpoints=[])
        pinned = self.store.history.messages(session.id, context.pinned)
        floor = self.estimator.raised(session.model, self.estimator.estimate(
            session.model, self.estimator.context_features(session, floor_context, pinned, user)))
        room = reply_room(self.config, session.window)
        if floor + room > session.window:
            mine = self.estimator.message(session.model, user.prompt_content())
            raise RequestError(
                ErrorCode.CONTEXT_OVERFLOW,
                f"this message is about {mine:,} tokens; with the system prompt, goals and pins "
                f"the prompt cannot be smaller than about {floor:,} tokens, and the window of "
                f"{session.window:,} must keep {room:,} for the answer. Nothing was compacted or "
                f"sent, and the context is as it was: send less (@file:summary instead of the "
                f"whole file), or {more_room(session)}")

    def _reply_room(self, session: SessionRecord, estimate: Estimate) -> int:
        """num_predict for this prompt: all the room the window leaves (at most what the
        session's own num_predict allows), never less than the reserved reply room, so
        that prompt plus answer always fit and Ollama never shifts or cuts the context.
        The room is what the raised estimate leaves, and the refusal says so."""
        raised = self.estimator.raised(session.model, estimate)
        room = session.window - raised
        reserve = reply_room(self.config, session.window)
        if room < reserve:
            compacted = self.auto.enabled(session)
            advice = (f"send less (@file:summary instead of a whole file), or {more_room(session)}"
                      if compacted else f"compact the session (`ctxkeep compact {session.name}`), "
                      f"send less, or {more_room(session)}")
            size = (f"about {estimate.tokens:,} tokens (up to {raised:,} with the estimate's "
                    f"measured error)" if estimate.uncertain else f"{raised:,} tokens")
            raise RequestError(
                ErrorCode.CONTEXT_OVERFLOW,
                f"the prompt would be {size}, leaving {max(room, 0):,} of the "
                f"window of {session.window:,} for the answer (at least {reserve:,} are kept)"
                f"{', even with the context compacted as far as it goes' if compacted else ''}. "
                f"Nothing was sent and the context is as it was: {advice}")
        wanted = session.options.get("num_predict")
        if isinstance(wanted, int) and wanted > 0:
            room = min(room, wanted)
        return room
