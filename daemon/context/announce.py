"""The one place that tells clients a session changed.

Every request or job that changes what the model would see calls
`prompt_changed` (the session's count becomes a fresh estimate, `exact:
false`, until the next turn's exact count) and then `changed`, which
publishes `session.updated` with the session's true `busy` and
`context.usage`. The job queue calls `busy_changed` whenever a session
starts or stops working.
"""

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context import reliability
from ctxkeep.daemon.context.estimator import Estimate, Estimator
from ctxkeep.daemon.context.listing import shown
from ctxkeep.daemon.context.speeds import Speeds
from ctxkeep.daemon.context.usage import usage_of
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.store.records import SessionRecord, View
from ctxkeep.daemon.store.store import Store, UnknownSession
from ctxkeep.protocol.events import ContextUsage, ContextWarning, SessionUpdated
from ctxkeep.protocol.structs import SessionInfo, Usage

log = logging.getLogger(__name__)
#: A session with more messages is read and estimated in worker threads (as recall indexes it).
ON_LOOP_MESSAGES = 2000


#: How near a restored snapshot's exact count the estimate must be for the count to stand.
RESTORED_AGREEMENT = 0.02


@dataclass
class Announcer:
    """Publishes session changes; reads state fresh from the store each time."""

    store: Store
    bus: EventBus
    estimator: Estimator
    config: Config
    busy: Callable[[str], bool]
    #: Each model's measured speeds: how much room recall's block may take (usage.measure).
    speeds: Speeds = field(default_factory=Speeds)
    #: Each session's compaction count when its reliability was last looked at (a pass's
    #: later levels do not count again: its warning is said once).
    _scored: dict[str, int] = field(default_factory=dict)

    def recall_read(self, model: str) -> int | None:
        """The most tokens recall's block may take for `model` on this machine."""
        return self.speeds.reads_in(model, self.config.recall_read_seconds)

    def info(self, session: SessionRecord) -> SessionInfo:
        return shown(session, busy=self.busy(session.id))

    def usage(self, session: SessionRecord, view: View | None = None) -> Usage:
        _, context, active = view or self.store.history.view(session.id)
        return usage_of(session, context, active, self.estimator, self.config, self.recall_read(session.model))

    async def prompt_changed(self, session_id: str, counted: int | None = None) -> SessionRecord:
        """What the model would see may have changed: record a fresh estimate in place of
        the count (committed by the writer thread). A prompt that is the one last counted
        (a new window, a name: nothing the model sees) keeps its exact count; so does one
        whose exact count `counted` is known (a restored snapshot's) when the estimate
        agrees with it (within RESTORED_AGREEMENT, and the estimate's own possible error on
        what it estimated: nothing the prompt holds changed since)."""
        if self.store.sessions.get(session_id).message_count > ON_LOOP_MESSAGES:  # read and counted off the loop
            session, context, active = await self.store.off_loop(self.store.history.view, session_id)

            def count() -> Estimate:  # the usage's folds too: the announcement that follows resumes them
                usage_of(session, context, active, self.estimator, self.config, self.recall_read(session.model))
                return self.estimator.context_estimate(session, context, active)
            estimate = await asyncio.to_thread(count)
        else:
            session, context, active = self.store.history.view(session_id)
            estimate = self.estimator.context_estimate(session, context, active)
        if counted is not None and abs(estimate.tokens - counted) <= \
                RESTORED_AGREEMENT * counted + self.estimator.margin(session.model) * estimate.uncertain:
            return session
        return await self.store.off_loop(self.store.context.set_estimate, session_id, estimate.tokens,
                                         estimate.uncertain == 0)

    def changed(self, session_id: str, usage: bool = True, view: View | None = None
                ) -> SessionInfo | None:
        """Publish `session.updated` (and `context.usage`) as the session is now (as
        `view` says, when the caller has just read or written it); None when it was deleted
        meanwhile (session.deleted said so)."""
        try:
            return self.announced(session_id, usage, view)
        except UnknownSession:
            return None

    def announced(self, session_id: str, usage: bool = True, view: View | None = None) -> SessionInfo:
        """`changed`, for a reply that carries the session: UnknownSession when it was
        deleted meanwhile (the request is answered with that error)."""
        session = view.session if view else self.store.sessions.get(session_id)
        return self._publish(session, self.usage(session, view) if usage else None)

    def _publish(self, session: SessionRecord, usage: Usage | None) -> SessionInfo:
        info = self.info(session)
        self.bus.publish(SessionUpdated(session=info), session.id)
        if usage is not None:
            self.bus.publish(ContextUsage(usage=usage), session.id)
        return info

    def busy_changed(self, session_id: str) -> None:
        self.changed(session_id, usage=False)

    async def compacted(self, session_id: str) -> None:
        """After a compaction changed the context: the change (a large context measured
        in a worker thread), and the reliability warning when it is first due
        (reliability.warns)."""
        try:
            view = self.store.history.view(session_id)
        except UnknownSession:
            return  # deleted meanwhile: session.deleted said so
        usage = await asyncio.to_thread(self.usage, view.session, view) if len(view.active) > ON_LOOP_MESSAGES \
            else self.usage(view.session, view)
        self._publish(view.session, usage)
        session = self.store.sessions.get(session_id)
        last = self._scored.get(session_id, session.compactions - 1)
        if last == session.compactions:
            return
        self._scored[session_id] = session.compactions
        if reliability.warns(session.parameter_size, session.compactions) \
                and not reliability.warns(session.parameter_size, last):
            self.bus.publish(ContextWarning(kind="reliability", message=reliability.warning(
                session.model, session.compactions)), session_id)
