"""Schema versions of the store and the steps between them.

A step runs inside one write transaction after the store was backed up. To
change the schema: bump SCHEMA_VERSION and append a step from the old version.
"""

from collections.abc import Callable
from typing import Any

import msgspec

from ctxkeep.daemon.store import codecs, keys, word_index

#: The schema this code writes.
SCHEMA_VERSION = 2


class Migration(msgspec.Struct, frozen=True):
    """One upgrade step: from_version -> to_version."""

    from_version: int
    to_version: int
    description: str
    apply: Callable[[Any, dict[str, Any]], None]


def _index_every_message(txn: Any, dbs: dict[str, Any]) -> None:
    """Version 2 searches history through a word index: build it for what is stored."""
    for key, raw in txn.cursor(db=dbs["messages"]):
        m = codecs.message(raw)
        word_index.add(txn, dbs["search"], keys.session_of(key), m.seq, m.content)


#: Steps in order, from version 1 (the first released schema).
MIGRATIONS: list[Migration] = [
    Migration(1, 2, "a word index of every message (search)", _index_every_message),
]
