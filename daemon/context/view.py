"""A session as one step of work sees it: read once, passed from step to step."""

from typing import NamedTuple

from ctxkeep.daemon.store.records import ActiveContext, MessageRecord, SessionRecord


class View(NamedTuple):
    """The session record, its context state and its active messages, oldest first."""

    session: SessionRecord
    context: ActiveContext
    active: list[MessageRecord]
