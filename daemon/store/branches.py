"""Branches: a new session whose history is another's up to a message, with the context as
it stood then. One transaction, O(messages up to that point); the two share nothing
mutable afterwards (every record is copied under the branch's own keys)."""

import secrets
import time
from collections.abc import Iterator
from itertools import takewhile

import msgspec

from ctxkeep.daemon.store import codecs, keys, word_index
from ctxkeep.daemon.store.context_records import ActiveContext, SnapshotRecord
from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.prompt_count import PromptCount
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.store.sessions import Sessions
from ctxkeep.daemon.store.txn import Txn

#: What a branch takes over of its source's settings, as they are.
SETTINGS = ("model", "system", "options", "num_ctx", "context_length", "parameter_size",
            "auto_compaction", "thresholds", "compaction_model", "recall", "recall_budget", "tools",
            "memory", "remembered")


def lineage(messages: list[MessageRecord], last: int) -> list[int]:
    """The conversation as it stood when message `last` was said (or current): every
    complete message up to it, each regenerated answer in place of the one it replaced, an
    edited question in place of the question it rewords and that one's answers."""
    conversation: list[int] = []
    for m in messages:
        if m.seq > last:
            break
        if m.kind != "message" or m.status != "complete" and m.seq != last:
            continue
        replaced = m.alternative_of
        if replaced >= 0 and replaced in conversation:
            at = conversation.index(replaced)
            conversation = conversation[:at] if m.role == "user" else conversation[:at] + conversation[at + 1:]
        conversation.append(m.seq)
    return conversation


def until(context: ActiveContext, last: int) -> ActiveContext:
    """A context state without anything that came after message `last`."""
    return ActiveContext(
        seqs=[s for s in context.seqs if s <= last],
        file_summaries=[s for s in context.file_summaries if s <= last],
        checkpoints=[c for c in context.checkpoints if c.last_seq <= last],
        goals=context.goals, pinned=[s for s in context.pinned if s <= last],
        last_auto_at=context.last_auto_at if context.last_auto_at <= last + 1 else -1)


class Branches:
    """Branching a session at a message."""

    def __init__(self, env: Environment, sessions: Sessions) -> None:
        self.env = env
        self.dbs = env.dbs
        self.sessions = sessions

    def branch(self, source_id: str, last: int, name: str = "") -> SessionRecord:
        """A branch of the session holding its history up to seq `last` (which must be
        stored; -1: none of it), named `name` or, when that is empty, after the source."""
        def apply(txn: Txn) -> SessionRecord:
            source = self.env.session_in(txn, source_id)
            assert -1 <= last < source.next_seq, "the handler checks the seq"
            now = time.time()
            record = SessionRecord(
                id=secrets.token_hex(6), name=name or self._free_name(txn, f"{source.name} (branch)"),
                created=now, updated=now, next_seq=last + 1, message_count=last + 1,
                count=PromptCount(tokens=source.count.tokens, exact=False), branched_from=source.id,
                branched_at=last, forgotten=[s for s in source.forgotten if s <= last],
                **{k: getattr(source, k) for k in SETTINGS})
            context = self._context_at(txn, source, last)
            self._copy_messages(txn, source.id, record.id, last)
            record.compactions = self._copy_compactions(txn, source.id, record.id, last)
            self.sessions.add(txn, record, context)
            return record
        return self.env.write(apply)

    def _free_name(self, txn: Txn, wanted: str) -> str:
        name, n = wanted, 1
        while txn.get(name.encode(), db=self.dbs["names"]):
            n += 1
            name = f"{wanted} {n}"
        return name

    def _records(self, txn: Txn, db: str, session_id: str) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) of one session in a database of per-session keys, in order."""
        cursor = txn.cursor(db=self.dbs[db])
        start = keys.prefix(session_id)
        if cursor.set_range(start):
            for key, value in cursor:
                if not key.startswith(start):
                    return
                yield key, value

    def _context_at(self, txn: Txn, source: SessionRecord, last: int) -> ActiveContext:
        """The source's context state as it stood after message `last`: the state now when
        no compaction came after it, else the snapshot taken before the first one that did;
        when that snapshot was pruned, every message up to `last` (nothing compacted)."""
        later = [c.at_seq for _, raw in self._records(txn, "compactions", source.id)
                 if (c := codecs.compaction(raw)).at_seq > last]
        now = until(self.env.context_in(txn, source.id), last)
        if last >= 0 and not later and last not in now.seqs and not any(c.last_seq >= last for c in now.checkpoints):
            # a message a regenerate or an edit replaced since: the conversation as it was then
            plain = [codecs.message(raw) for _, raw in self._records(txn, "messages", source.id)]
            return msgspec.structs.replace(now, seqs=lineage(plain, last))
        if not later:
            return now
        taken: list[SnapshotRecord] = [s for _, raw in self._records(txn, "snapshots", source.id)
                                       if (s := codecs.snapshot(raw)).next_seq > last]
        if taken and taken[0].next_seq <= min(later):
            return until(taken[0].context, last)
        plain = [codecs.message(raw) for _, raw in self._records(txn, "messages", source.id)]
        return ActiveContext(seqs=[m.seq for m in plain if m.seq <= last and m.kind == "message"])

    def _copy_messages(self, txn: Txn, source_id: str, target_id: str, last: int) -> None:
        """Messages up to `last`, with their file references and search words."""
        start = len(keys.prefix(source_id))

        def upto(db: str) -> list[tuple[bytes, bytes]]:  # read whole before anything is written
            seq_of = lambda key: keys.NUMBER.unpack(key[start:start + keys.NUMBER.size])[0]
            return list(takewhile(lambda kv: seq_of(kv[0]) <= last, self._records(txn, db, source_id)))
        for key, raw in upto("messages"):
            seq = keys.number_of(key)
            txn.put(keys.numbered(target_id, seq), raw, db=self.dbs["messages"])
            word_index.add(txn, self.dbs["search"], target_id, seq, codecs.message(raw).content)
        for key, raw in upto("file_refs"):  # keyed by their message's seq, then an index
            txn.put(keys.prefix(target_id) + key[start:], raw, db=self.dbs["file_refs"])

    def _copy_compactions(self, txn: Txn, source_id: str, target_id: str, last: int) -> int:
        """The audit records of compactions made up to `last`; how many."""
        copied = 0
        for key, raw in list(self._records(txn, "compactions", source_id)):
            if codecs.compaction(raw).at_seq <= last:
                txn.put(keys.numbered(target_id, keys.number_of(key)), raw, db=self.dbs["compactions"])
                copied += 1
        return copied
