"""A turn's question: as it will be stored, until its commit says how it was.

The question is committed once the model request is out (or before anything that waits:
a call to /api/show, a compaction, a failure), so a turn carries it in two states: the
draft, and the record once stored, announced to clients (`query.received`) once."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ctxkeep.daemon.jobs.deferred import Deferred
from ctxkeep.daemon.store.records import MessageRecord


class Withdrawn(Exception):
    """The question's commit failed: the turn ends without an event (its `send` got the
    error)."""


def stored_question(commit: "asyncio.Future") -> MessageRecord | None:
    """The stored question, once its commit succeeded (else None)."""
    if not commit.done() or commit.cancelled() or commit.exception() is not None:
        return None
    return commit.result()[1][0]


@dataclass(frozen=True)
class Reopened:
    """A regenerated turn's question and the answer the new one replaces; `back` is the
    exchange it takes out of the end of the active context (the two themselves, or the
    exchange a failed edit of the question was to replace; none for a failed turn), which
    goes back if the new answer fails."""

    question: int
    answer: int
    back: tuple[int, ...] = ()

    @property
    def in_context(self) -> bool:
        """The question and this answer are what the model sees last."""
        return self.back == (self.question, self.answer)


@dataclass
class Question:
    """The turn's question: `draft` until `stored`."""

    commit: Deferred
    draft: MessageRecord
    #: Called once with the stored question (publishes `query.received`).
    announce: Callable[[MessageRecord], object]
    stored: MessageRecord | None = None
    #: Set for a regenerated turn.
    reopened: Reopened | None = None

    @property
    def record(self) -> MessageRecord:
        """The question as stored, or as it will be."""
        return self.stored or self.draft

    def start(self) -> "asyncio.Future":
        """Start the commit now (if it has not started)."""
        return self.commit.start()

    async def settled(self) -> MessageRecord:
        """The stored question (its commit started and awaited, however this task is being
        stopped), announced once; Withdrawn when it could not be stored."""
        if self.stored is None:
            commit = self.commit.start()
            await asyncio.wait([commit])
            stored = stored_question(commit)
            if stored is None:
                raise Withdrawn
            self.stored = stored
            self.announce(stored)
        return self.stored
