"""Schema versions of the store and the steps between them.

A step runs inside one write transaction after the store was backed up. To
change the schema: bump SCHEMA_VERSION and append a step from the old version.
"""

from collections.abc import Callable
from typing import Any

import msgspec

#: The schema this code writes.
SCHEMA_VERSION = 1


class Migration(msgspec.Struct, frozen=True):
    """One upgrade step: from_version -> to_version."""

    from_version: int
    to_version: int
    description: str
    apply: Callable[[Any, dict[str, Any]], None]


#: Steps in order. Version 1 is the first released schema, so the list is empty.
MIGRATIONS: list[Migration] = []
