"""Schema versions of the store and the steps between them.

A step runs inside one write transaction after the store was backed up. To
change the schema: bump SCHEMA_VERSION and append a step from the old version.
"""

from collections.abc import Callable
from typing import Any

import msgspec

from ctxkeep.daemon.store import codecs, keys, word_index

#: The schema this code writes.
SCHEMA_VERSION = 3


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


#: Version 2's loose count fields of a session and a snapshot, by their version 3 homes:
#: (the field's old name, its name in the struct that holds it now).
_COUNT = [("token_count", "tokens"), ("tokens_exact", "exact"), ("answer_tokens", "answer"),
          ("recalled_tokens", "recalled"), ("cached_tokens", "cached")]
_ANCHOR = [("anchor_tokens", "tokens"), ("anchor_features", "features"), ("anchor_model", "model"),
           ("anchor_recall", "recall")]
_CACHE = [("cache_prompt_tokens", "prompt"), ("cache_served_tokens", "served")]


def _gather(fields: dict[str, Any], name: str, moves: list[tuple[str, str]]) -> None:
    """The `moves` fields taken out of `fields` into the struct `name`, under their new
    names (absent: its default; a record that has the struct already keeps it)."""
    gathered = {new: fields.pop(old) for old, new in moves if old in fields}
    fields.setdefault(name, gathered)


def _counts_whole(txn: Any, dbs: dict[str, Any]) -> None:
    """Version 3 keeps a session's prompt count, anchor and cache tally as structs of their
    own (a snapshot's count too): gather each record's loose fields into them."""
    for key, raw in list(txn.cursor(db=dbs["sessions"])):
        fields = msgspec.msgpack.decode(raw)
        _gather(fields, "count", _COUNT)
        _gather(fields, "anchor", _ANCHOR)
        _gather(fields, "cache", _CACHE)
        txn.put(key, codecs.checked(codecs.session(codecs.encode(fields)), codecs.session), db=dbs["sessions"])
    for key, raw in list(txn.cursor(db=dbs["snapshots"])):
        fields = msgspec.msgpack.decode(raw)
        _gather(fields, "count", _COUNT)
        txn.put(key, codecs.checked(codecs.snapshot(codecs.encode(fields)), codecs.snapshot), db=dbs["snapshots"])


#: Steps in order, from version 1 (the first released schema).
MIGRATIONS: list[Migration] = [
    Migration(1, 2, "a word index of every message (search)", _index_every_message),
    Migration(2, 3, "a session's prompt count, anchor and cache tally as structs of their own", _counts_whole),
]
