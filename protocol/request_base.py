"""What every request is: the base every request type derives from, and the field types
they share."""

from typing import Annotated

import msgspec
from msgspec import Meta

from .limits import NumCtx as NumCtx  # re-exported: the requests' field type
from .version import PROTOCOL_VERSION

#: A session's id, a unique prefix of its id (4+ characters), or its name.
SessionRef = Annotated[str, Meta(min_length=1, max_length=200)]
RequestId = Annotated[str, Meta(max_length=200)]


class Request(msgspec.Struct, tag_field="type", kw_only=True, forbid_unknown_fields=True):
    """Fields every request carries."""

    id: RequestId = ""
    v: Annotated[int, Meta(ge=1, le=2**31)] = PROTOCOL_VERSION
