"""Records to MessagePack and back: one encoder, one decoder per record type."""

import msgspec

from ctxkeep.daemon.store.records import (
    ActiveContext, Calibration, CompactionRecord, FileRefRecord, MessageRecord, SessionRecord,
    SnapshotRecord,
)

encode = msgspec.msgpack.Encoder().encode
session = msgspec.msgpack.Decoder(SessionRecord).decode
message = msgspec.msgpack.Decoder(MessageRecord).decode
context = msgspec.msgpack.Decoder(ActiveContext).decode
compaction = msgspec.msgpack.Decoder(CompactionRecord).decode
calibration = msgspec.msgpack.Decoder(Calibration).decode
file_ref = msgspec.msgpack.Decoder(FileRefRecord).decode
snapshot = msgspec.msgpack.Decoder(SnapshotRecord).decode
vector = msgspec.msgpack.Decoder(list[float]).decode
