"""Records to MessagePack and back: one encoder, one decoder per record type."""

from collections.abc import Callable
from typing import Any

import msgspec

from ctxkeep.daemon.store.context_records import ActiveContext, Calibration, CompactionRecord, SnapshotRecord
from ctxkeep.daemon.store.errors import Undecodable
from ctxkeep.daemon.store.records import FileRefRecord, MessageRecord, SessionRecord
from ctxkeep.protocol.structs import SessionInfo

encode = msgspec.msgpack.Encoder().encode
session = msgspec.msgpack.Decoder(SessionRecord).decode
message = msgspec.msgpack.Decoder(MessageRecord).decode
context = msgspec.msgpack.Decoder(ActiveContext).decode
compaction = msgspec.msgpack.Decoder(CompactionRecord).decode
calibration = msgspec.msgpack.Decoder(Calibration).decode
file_ref = msgspec.msgpack.Decoder(FileRefRecord).decode
snapshot = msgspec.msgpack.Decoder(SnapshotRecord).decode
vector = msgspec.msgpack.Decoder(list[float]).decode
#: An answer's draft: (what it said so far, its thinking so far).
draft = msgspec.msgpack.Decoder(tuple[str, str]).decode
#: A session as clients decode it (a stored session must be one they can read).
session_info = msgspec.msgpack.Decoder(SessionInfo).decode


def checked(record: Any, decode: Callable[[bytes], Any]) -> bytes:
    """`record` encoded, once it is known to decode again (what is stored must always be
    readable: a value of the wrong type or out of range is refused, not written)."""
    try:
        raw = encode(record)
        decode(raw)
    except (msgspec.ValidationError, msgspec.EncodeError, OverflowError, TypeError) as exc:
        raise Undecodable(f"not stored: {type(record).__name__} would not read back ({exc})") from None
    return raw


def in_range(value: Any, kind: Any, what: str) -> None:
    """Refuse a record whose `what` is not a `kind` (a range type of protocol/limits.py)."""
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise Undecodable(f"not stored: {what} {value!r} is out of range ({exc})") from None
