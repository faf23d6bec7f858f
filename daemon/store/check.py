"""A read-only check of a store's invariants (after a crash, in tests, by hand).

    ctxkeepd check STORE_FOLDER [--settled]

Opens the LMDB environment read-only and checks every session: its name maps
to it; its history holds exactly the sequence numbers 0 … next_seq − 1; the
active context, file summaries and pins name stored messages, each once; every image a
message holds is stored;
questions awaiting an answer (`pending`) are stored user messages; and with
`--settled` (no daemon running work), no question is pending and every
question has an answer naming it. Prints one line per problem; exits 1 when
there is any.
"""

import struct
from pathlib import Path

import lmdb
import msgspec

from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord

_SEQ = struct.Struct(">Q")


def check(path: Path, settled: bool = False) -> list[str]:
    """Every broken invariant of the store at `path`, as sentences (none: [])."""
    env = lmdb.open(str(path), readonly=True, max_dbs=32, subdir=True, lock=True)
    problems: list[str] = []
    try:
        dbs = {name: env.open_db(name.encode(), create=False) for name in
               ("sessions", "names", "messages", "active")}
        try:
            dbs["images"] = env.open_db(b"images", create=False)
        except lmdb.NotFoundError:  # a store from before images: no message holds one
            pass
        session_dec = msgspec.msgpack.Decoder(SessionRecord)
        message_dec = msgspec.msgpack.Decoder(MessageRecord)
        active_dec = msgspec.msgpack.Decoder(ActiveContext)
        with env.begin() as txn:
            for key, raw in txn.cursor(db=dbs["sessions"]):
                session = session_dec.decode(raw)
                problems += _check_session(txn, dbs, session, key, message_dec, active_dec, settled)
    finally:
        env.close()
    return problems


def _check_session(txn, dbs, s: SessionRecord, key: bytes, message_dec, active_dec,
                   settled: bool) -> list[str]:
    out: list[str] = []
    who = f"session {s.id} ({s.name})"
    if key.decode() != s.id:
        out.append(f"{who}: stored under the key {key!r}")
    if txn.get(s.name.encode(), db=dbs["names"]) != s.id.encode():
        out.append(f"{who}: its name does not lead to it")
    prefix = s.id.encode() + b"/"
    messages: dict[int, MessageRecord] = {}
    cursor = txn.cursor(db=dbs["messages"])
    if cursor.set_range(prefix):
        for k, raw in cursor:
            if not k.startswith(prefix):
                break
            seq = _SEQ.unpack(k[len(prefix):])[0]
            message = message_dec.decode(raw)
            if message.seq != seq:
                out.append(f"{who}: message under #{seq} says it is #{message.seq}")
            messages[seq] = message
    lost = sorted({i.hash for m in messages.values() for i in m.images
                   if "images" not in dbs or txn.get(i.hash.encode(), db=dbs["images"]) is None})
    if lost:
        out.append(f"{who}: images its messages hold are not stored: {[h[:12] for h in lost[:5]]}")
    if sorted(messages) != list(range(s.next_seq)):
        out.append(f"{who}: history holds {len(messages)} messages, not 0..{s.next_seq - 1}")
    if s.message_count != len(messages):
        out.append(f"{who}: message_count {s.message_count}, but {len(messages)} stored")
    raw = txn.get(s.id.encode(), db=dbs["active"])
    context = active_dec.decode(raw) if raw else ActiveContext()
    for what, seqs in (("active context", context.seqs), ("file summaries", context.file_summaries),
                       ("pins", context.pinned), ("pending questions", s.pending)):
        missing = [q for q in seqs if q not in messages]
        if missing:
            out.append(f"{who}: {what} name messages not stored: {missing[:5]}")
        if len(set(seqs)) != len(seqs):
            out.append(f"{who}: {what} name a message twice")
    if any(messages[q].role != "user" for q in s.pending if q in messages):
        out.append(f"{who}: a pending question is not a user message")
    if settled:
        if s.pending:
            out.append(f"{who}: questions still pending: {s.pending[:5]}")
        answered = {m.reply_to for m in messages.values() if m.role == "assistant"}
        questions = [q for q, m in messages.items() if m.role == "user" and m.kind == "message"]
        unanswered = [q for q in questions if q not in answered]
        if unanswered:
            out.append(f"{who}: questions with no answer: {unanswered[:5]}")
    return out
