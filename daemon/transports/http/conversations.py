"""Which session a stateless client's conversation continues.

HTTP clients resend the whole conversation each time. Each session's conversation (its
system prompt, then its complete user and assistant messages, whitespace-normalised) is
kept as a chain of hashes, one per prefix, in a dict from hash to the sessions holding that
prefix: a request looks up the hash of its own prefix (the messages before its new one) and
finds, in one lookup, the session that ends there, or the longest prefix it shares with
one. The chains are built from the store on first use and kept current by the engine's
events (a session an event names is folded on from where it was, before the next lookup).
"""

import base64
import binascii
import hashlib
from dataclasses import dataclass, field

from ctxkeep.daemon.store.records import MessageRecord, SessionRecord
from ctxkeep.daemon.store.store import Store, UnknownSession
from ctxkeep.protocol.events import Event, SessionDeleted
from ctxkeep.protocol.imported import ImportedMessage
from ctxkeep.protocol.tools import ToolCall, calls_text

#: Messages read from the store at a time while a session is folded.
PAGE = 500


#: A longer text is normalised in slices (cut at whitespace), so that a worker thread doing
#: it lets the event loop run between them.
SLICE = 1 << 16


def normalise(text: str) -> str:
    """Whitespace collapsed and trimmed: how two copies of a message are compared."""
    if len(text) <= SLICE:
        return " ".join(text.split())
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + SLICE)
        while end < len(text) and not text[end].isspace() and end - start < 2 * SLICE:
            end += 1  # to the end of the word (a slice never cuts one)
        pieces.extend(text[start:end].split())
        start = end
    return " ".join(pieces)


def seed(system: str) -> bytes:
    """The chain's start: the system prompt."""
    return hashlib.blake2b(b"system\0" + normalise(system).encode(), digest_size=16).digest()


def link(previous: bytes, role: str, content: str) -> bytes:
    """The chain one message further."""
    return hashlib.blake2b(previous + role.encode() + b"\0" + normalise(content).encode(),
                           digest_size=16).digest()


def keyed(role: str, content: str, calls: list[ToolCall], images: list[str]) -> tuple[str, str]:
    """A message as two copies of it are compared: its role, and its text with its tool calls
    and its images' hashes."""
    parts = [content, calls_text(calls) if calls else "", " ".join(images)]
    return role, "\n".join(p for p in parts if p)


def stored_key(m: MessageRecord) -> tuple[str, str]:
    return keyed(m.role, m.content, m.tool_calls, [i.hash for i in m.images])


def sent_keys(conversation: list[ImportedMessage]) -> list[tuple[str, str]]:
    """A client's copy of its conversation as keys (a tool message's content is its results'
    text, as stored; an image is hashed: off the event loop when there are any)."""
    return [sent_key(m) for m in conversation]


def sent_key(m: ImportedMessage) -> tuple[str, str]:
    try:
        hashes = [hashlib.sha256(base64.b64decode(i.data)).hexdigest() for i in m.images]
    except (binascii.Error, ValueError):
        hashes = ["not base64"]  # matches no stored image: the send says what is wrong
    return keyed(m.role, m.content, m.tool_calls, hashes)


def chain(system: str, messages: list[tuple[str, str]]) -> list[bytes]:
    """The hash of every prefix of a conversation (its messages' keys), the empty one first."""
    out = [seed(system)]
    for role, content in messages:
        out.append(link(out[-1], role, content))
    return out


def in_conversation(message: MessageRecord) -> bool:
    """What a client's copy of the conversation holds: complete user, assistant and tool
    messages (not summaries, not answers cut short)."""
    return message.kind == "message" and message.status == "complete" \
        and message.role in ("user", "assistant", "tool")


@dataclass
class Folded:
    """One session's chain as far as it was read."""

    system: str
    hashes: list[bytes]
    #: The next history seq to read.
    next_seq: int = 0
    #: Which history seq each prefix ends at (its last message's seq; -1 for the empty one).
    seqs: list[int] = field(default_factory=lambda: [-1])


@dataclass(frozen=True)
class Match:
    """Where a conversation stands: `session` (None: no stored conversation shares any
    of it) and how many of its messages that session holds (`shared`); `continues` when the
    session ends exactly there, else the conversation branches from it after `shared`
    messages, whose last one is history seq `at_seq`."""

    session: str | None
    shared: int = 0
    continues: bool = False
    at_seq: int = -1


class ConversationIndex:
    """Prefix hashes of every session's conversation, kept current from the engine's events."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.folded: dict[str, Folded] = {}
        #: prefix hash -> {session id: the prefix's length in messages}
        self.prefixes: dict[bytes, dict[str, int]] = {}
        self._dirty: set[str] = set()
        self._loaded = False

    def seen(self, event: Event) -> None:
        """An engine event (a bus listener): the session it names may have new messages."""
        if not event.session_id:
            return
        if isinstance(event, SessionDeleted):
            self._forget(event.session_id)
            self._dirty.discard(event.session_id)
        else:
            self._dirty.add(event.session_id)

    def unread(self) -> int:
        """How many stored messages `refresh` would read (a cheap look at the sessions the
        events named; every session's, the first time, counted as more than any limit)."""
        if not self._loaded:
            return 1 << 62
        total = 0
        for session_id in self._dirty:
            folded = self.folded.get(session_id)
            try:
                stored = self.store.sessions.get(session_id).next_seq
            except UnknownSession:
                continue
            total += stored - (folded.next_seq if folded else 0)
        return total

    def refresh(self) -> None:
        """Fold what changed since the last lookup (every session, the first time). Reads
        the store: off the event loop unless `unread` is small."""
        if not self._loaded:
            self._dirty.update(s.id for s in self.store.sessions.all())
            self._loaded = True
        while self._dirty:
            self._fold(self._dirty.pop())

    def find(self, system: str, messages: list[tuple[str, str]]) -> Match:
        """The session `messages` (the keys of a client's conversation before its new
        message: `sent_keys`) continues, or the one it shares the longest prefix with. Call
        `refresh` first."""
        return self.find_chain(chain(system, messages))

    def find_chain(self, hashes: list[bytes]) -> Match:
        """`find`, for a conversation's `chain` of hashes (made beforehand: a worker thread
        may make a long one)."""
        messages = hashes[1:]
        ends = self.prefixes.get(hashes[-1], {})
        done = [sid for sid, length in ends.items() if len(self.folded[sid].hashes) - 1 == length]
        if done and messages:
            return Match(self._newest(done), len(messages), continues=True,
                         at_seq=self.folded[self._newest(done)].seqs[-1])
        for length in range(len(messages), 0, -1):
            holders = self.prefixes.get(hashes[length])
            if holders:
                sid = self._newest(list(holders))
                return Match(sid, length, at_seq=self.folded[sid].seqs[length])
        return Match(None)

    def answered(self, hashes: list[bytes]) -> str | None:
        """The newest session whose conversation is the chain `hashes` and one message after
        it (its answer): a client that resends it did not get that answer (it hung up)."""
        length = len(hashes) - 1
        ends = self.prefixes.get(hashes[-1], {})
        found = [sid for sid, at in ends.items() if at == length and len(self.folded[sid].hashes) - 1 == length + 1]
        return self._newest(found) if found and length else None

    def _newest(self, session_ids: list[str]) -> str:
        return max(session_ids, key=lambda sid: (self.folded[sid].next_seq, sid))

    def _fold(self, session_id: str) -> None:
        try:
            session: SessionRecord = self.store.sessions.get(session_id)
        except UnknownSession:
            self._forget(session_id)
            return
        folded = self.folded.get(session_id)
        if folded is None or folded.system != session.system:
            self._forget(session_id)
            folded = self.folded[session_id] = Folded(session.system, [seed(session.system)])
            self._add(folded.hashes[0], session_id, 0)
        while folded.next_seq < session.next_seq:
            page, _, _ = self.store.history.page(session_id, folded.next_seq, PAGE)
            if not page:
                break
            for message in page:
                folded.next_seq = message.seq + 1
                if in_conversation(message):
                    folded.hashes.append(link(folded.hashes[-1], *stored_key(message)))
                    folded.seqs.append(message.seq)
                    self._add(folded.hashes[-1], session_id, len(folded.hashes) - 1)

    def _add(self, digest: bytes, session_id: str, length: int) -> None:
        self.prefixes.setdefault(digest, {})[session_id] = length

    def _forget(self, session_id: str) -> None:
        folded = self.folded.pop(session_id, None)
        if folded is None:
            return
        for digest in folded.hashes:
            holders = self.prefixes.get(digest)
            if holders is not None:
                holders.pop(session_id, None)
                if not holders:
                    del self.prefixes[digest]
