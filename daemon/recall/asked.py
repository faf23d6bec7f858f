"""What a turn's new message asks recall, worked out once a turn (`Recaller.ask`): its
terms and how it asks, whom of a chat log it asks about, the time it names, and whether
memory's rules leave it anything to bring. Each fitting of the block to the room the prompt
leaves (turn_recall.py asks again, smaller, where a block would not fit) ranks with it."""

import msgspec

from ctxkeep.daemon.memory.query import Query
from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.store.records import MessageRecord


class Asked(msgspec.Struct, frozen=True):
    """A turn's new message as recall reads it (a Struct: made once a turn, at C speed)."""

    #: The session's recall index (its passages, and who speaks in a chat log).
    index: SessionIndex
    user: MessageRecord
    #: The message comes from outside a chat log and asks about its people (`writer`: the
    #: role of the one it names, None: no one); `question`: its text without that name.
    about_them: bool
    writer: str | None
    question: str
    #: Its terms as a query, and the query's weighted terms (with the turn before's where
    #: it leans on that turn).
    asked: list[str]
    terms: dict[str, float]
    #: It leans on the turn before and refers back to it: embedded with that turn.
    with_turn_before: bool
    #: What memory is asked (its vector filled in where one is asked for).
    elsewhere: Query
    #: It speaks of the user's own past, or of a chat log's people.
    about_past: bool
    #: Memory's rules leave it something to bring, whatever its vector (memory.may_bring):
    #: its vector is asked for even where the session's own history gives it nothing.
    memory_may: bool
