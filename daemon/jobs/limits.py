"""What a prompt may be: refused when it cannot fit, and the room it leaves for the answer
(the mixin `Generations` checks its turns with)."""

import msgspec

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.autocompact import AutoCompactor
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.usage import reply_room
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.protocol import SessionStore
from ctxkeep.daemon.store.records import ActiveContext, MessageRecord, SessionRecord
from ctxkeep.protocol import ErrorCode


class TurnLimits:
    """Needs `store`, `estimator`, `config` and `auto`."""

    store: SessionStore
    estimator: Estimator
    config: Config
    auto: AutoCompactor

    def _refuse_impossible(self, session: SessionRecord, context: ActiveContext,
                           user: MessageRecord) -> None:
        """Refuse a question that cannot fit however much is compacted: the system prompt,
        goals, pins and the question itself, plus the reply room, over the window."""
        floor_context = msgspec.structs.replace(context, seqs=[], checkpoints=[])
        pinned = self.store.messages(session.id, context.pinned)
        floor = self.estimator.raised(session.model, self.estimator.context(
            session, floor_context, pinned, user))
        room = reply_room(self.config, session.window)
        if floor + room > session.window:
            mine = self.estimator.message(session.model, user.prompt_content())
            raise RequestError(
                ErrorCode.CONTEXT_OVERFLOW,
                f"this message is about {mine:,} tokens; with the system prompt, goals and pins "
                f"the prompt cannot be smaller than about {floor:,} tokens, and the window of "
                f"{session.window:,} must keep {room:,} for the answer. Nothing was compacted or "
                f"sent: send less (@file:summary instead of the whole file), or raise num_ctx "
                f"(`ctxkeep set {session.name} --num-ctx N`)")

    def _reply_room(self, session: SessionRecord, estimate: int) -> int:
        """num_predict for this prompt: all the room the window leaves (at most what the
        session's own num_predict allows), never less than the reserved reply room, so
        that prompt plus answer always fit and Ollama never shifts or cuts the context."""
        room = session.window - self.estimator.raised(session.model, estimate)
        reserve = reply_room(self.config, session.window)
        if room < reserve:
            compacted = self.auto.enabled(session)
            advice = ("send less (@file:summary instead of a whole file), or raise num_ctx "
                      f"(`ctxkeep set {session.name} --num-ctx N`)" if compacted else
                      f"compact the session (`ctxkeep compact {session.name}`), raise num_ctx, "
                      "or send less")
            raise RequestError(
                ErrorCode.CONTEXT_OVERFLOW,
                f"the prompt would be about {estimate:,} tokens, leaving {max(room, 0):,} of the "
                f"window of {session.window:,} for the answer (at least {reserve:,} are kept)"
                f"{', even with the context compacted as far as it goes' if compacted else ''}. "
                f"Nothing was sent and the context is as it was: {advice}")
        wanted = session.options.get("num_predict")
        if isinstance(wanted, int) and wanted > 0:
            room = min(room, wanted)
        return room
