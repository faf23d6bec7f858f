"""The store's layout: its named databases and how their keys are made.

One LMDB environment under `$XDG_DATA_HOME/ctxkeep/store`. Named databases:

- `meta`: `schema_version`.
- `sessions`: session id -> SessionRecord.
- `names`: session name -> session id (names are unique).
- `active`: session id -> ActiveContext (what the model sees).
- `messages`: session id + `/` + big-endian u64 sequence -> MessageRecord.
- `compactions`: session id + `/` + big-endian u64 time (ns) -> CompactionRecord (the audit trail).
- `file_refs`: session id + `/` + big-endian u64 message seq + u16 index -> FileRefRecord.
- `snapshots`: session id + `/` + big-endian u64 time (ns) -> SnapshotRecord.
- `calibration`: model name (or model NUL session id) -> Calibration (token estimates fitted to exact counts).
- `embeddings`: model + `/` + sha256 of the text -> list of floats (a cache).
- `search`: word + NUL + session id + `/` + big-endian u64 seq -> nothing (a word index).
- `images`: sha256 of an image's bytes, as hex -> the bytes (stored once, whoever holds it).
- `drafts`: session id + `/` + big-endian u64 question seq -> [answer so far, thinking so far]
  (what a turn streamed, saved as it streams: a crash keeps it as the interrupted answer).
"""

import hashlib
import struct

DATABASES = ("meta", "sessions", "names", "messages", "active", "compactions", "calibration",
             "file_refs", "snapshots", "embeddings", "search", "images", "drafts")
#: A sequence number (or a time in ns) in a key: big-endian, so keys sort in its order.
NUMBER = struct.Struct(">Q")
#: A file reference's index within its message.
FILE_INDEX = struct.Struct(">H")


def session_key(session_id: str) -> bytes:
    """The key of a session's record (and of its context state)."""
    return session_id.encode()


def prefix(session_id: str) -> bytes:
    """What every per-session key of the session starts with."""
    return session_id.encode() + b"/"


def numbered(session_id: str, number: int) -> bytes:
    """A per-session key: a message's (by seq), a compaction's or snapshot's (by time)."""
    return prefix(session_id) + NUMBER.pack(number)


def number_of(key: bytes) -> int:
    """The number a per-session key ends with."""
    return NUMBER.unpack(key[-NUMBER.size:])[0]


def session_of(key: bytes) -> str:
    """The session a per-session key belongs to."""
    return key[:-NUMBER.size - 1].decode()


def file_ref_key(session_id: str, seq: int, index: int) -> bytes:
    return numbered(session_id, seq) + FILE_INDEX.pack(index)


def word_key(word: str, session_id: str = "", seq: int | None = None) -> bytes:
    """A search index key; without `seq` (and `session_id`), the prefix of a word's keys
    (in one session)."""
    key = word.encode() + b"\x00"
    if session_id:
        key += prefix(session_id)
        if seq is not None:
            key += NUMBER.pack(seq)
    return key


def model_key(model: str) -> bytes:
    """A model's name as a key: itself where LMDB takes it (1 to 400 bytes), else its digest
    (a name may be empty, or up to 200 characters of 4 bytes each; LMDB's keys end at 511)."""
    raw = model.encode()
    return raw if 0 < len(raw) <= 400 else b"#" + hashlib.sha256(raw).hexdigest().encode()


def embedding_key(model: str, digest: str) -> bytes:
    return model_key(model) + b"/" + digest.encode()
