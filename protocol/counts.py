"""The integers of the protocol."""

from typing import Annotated

from msgspec import Meta

#: A non-negative integer that every JSON implementation represents exactly.
Count = Annotated[int, Meta(ge=0, le=2**53)]
#: A sequence number of a message inside its session.
Seq = Annotated[int, Meta(ge=0, le=2**53)]


def bounded(value: int) -> int:
    """A number from outside (a model server's count or duration) as a Count: negative
    ones are 0, huge ones the largest a Count holds."""
    return min(max(0, int(value)), 2**53)
