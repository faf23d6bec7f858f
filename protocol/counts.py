"""The integers of the protocol."""

from typing import Annotated

from msgspec import Meta

#: A non-negative integer that every JSON implementation represents exactly.
Count = Annotated[int, Meta(ge=0, le=2**53)]
#: A sequence number of a message inside its session.
Seq = Annotated[int, Meta(ge=0, le=2**53)]
