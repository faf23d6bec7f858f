"""What the log shows, entry by entry: a message, a compaction's marker line, or the line
that says what recall brought into a prompt; and a history page turned into entries."""

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from ...protocol.structs import CompactionMark, MessageInfo
from ...protocol.tools import calls_text
from .words import stopped, when


@dataclass(eq=False)  # an entry is itself: two alike are still two
class Entry:
    """What one entry of the log shows: a message (`role`, `text`, a `note` beside the
    name) or a `marker` line."""

    kind: str  # "message" | "marker"
    text: str
    role: str = ""
    note: str = ""
    who: str = ""
    #: The message's seq in the history (-1: a marker, or not stored yet).
    seq: int = -1
    #: A "recall" entry's excerpts, shown when it is opened (a click on its line), and for
    #: each line that is another chat's message, that message (session id, seq): a link.
    details: str = ""
    links: dict[int, tuple[str, int]] = field(default_factory=dict)
    expanded: bool = False
    #: When the message was stored (Unix seconds; 0: not stored yet), shown on hover.
    created: float = 0.0
    #: An answer's question (-1: none).
    reply_to: int = -1
    #: False for an answer cut short.
    whole: bool = True
    pinned: bool = False
    #: An answer with alternatives: each whole answer to its question, oldest first (the
    #: one shown among them); empty when it has none.
    choices: list["Entry"] = field(default_factory=list)
    #: The hashes of the images the message holds (shown as thumbnails).
    images: list[str] = field(default_factory=list)

    def choose(self, seq: int) -> None:
        """Show the alternative `seq` in this entry."""
        chosen = next(c for c in self.choices if c.seq == seq)
        self.text, self.who, self.seq, self.note, self.created = (
            chosen.text, chosen.who, chosen.seq, chosen.note, chosen.created)

    def add_choice(self, answer: "Entry") -> None:
        """Another whole answer to this one's question joins it, and is shown."""
        self.choices = self.choices or [replace(self, choices=[])]
        self.choices.append(replace(answer, choices=[]))
        self.choose(answer.seq)

    def choice_index(self) -> int:
        return next(i for i, c in enumerate(self.choices) if c.seq == self.seq)


#: What can be done with a stored message, by its role.
ACTIONS = {"user": ("copy", "edit", "pin", "branch"), "assistant": ("copy", "retry", "pin", "branch")}
#: The note of an answer that reached its length limit.
CUT = "cut at its length limit"


def actions_html(entry: Entry, colour: str) -> str:
    """A stored message's actions, as small links after its name (`act:NAME:SEQ`; Tab
    reaches them, Enter follows one): an answer with alternatives starts with arrows
    between them (‹ 2/3 ›), a pinned message offers unpin."""
    if entry.kind != "message" or entry.seq < 0:
        return ""

    def link(name: str, seq: int, text: str = "") -> str:
        return (f'<a href="act:{name}:{seq}" style="color:{colour}; text-decoration: none;">'
                f'{text or name}</a>')
    names = ["unpin" if name == "pin" and entry.pinned else name for name in ACTIONS.get(entry.role, ())]
    if entry.role == "assistant" and entry.note.startswith(CUT):
        names.insert(1, "continue")  # an answer cut at its length limit: go on from there
    links = [link(name, entry.seq) for name in names]
    if len(entry.choices) > 1:
        i, seqs = entry.choice_index(), [c.seq for c in entry.choices]
        arrows = (link("alt", seqs[i - 1], "‹") if i else "‹") + f" {i + 1}/{len(seqs)} " + \
            (link("alt", seqs[i + 1], "›") if i + 1 < len(seqs) else "›")
        links.insert(0, arrows)
    return f' &nbsp;<span style="font-size: small;">{" · ".join(links)}</span>' if links else ""


def time_title(entry: Entry) -> str:
    """The hover text of a message's name: when it was stored."""
    return f' title="{when(entry.created)}"' if entry.created else ""


def entries_of(messages: list[MessageInfo], marks: list[CompactionMark],
               pinned: Collection[int] = ()) -> list[Entry]:
    """A history page as the log shows it: each compaction's line where it happened (in
    place of the summary it wrote), the messages in between; the whole answers to one
    question as one entry with its alternatives, showing the newest."""
    at = {m.at: m for m in marks}
    out: list[Entry] = []
    for m in messages:
        if m.seq in at:
            out.append(Entry("marker", at.pop(m.seq).marker))
            if m.kind == "summary":
                continue
        if m.kind == "summary":
            out.append(Entry("marker", "── the earlier conversation, summarized ──"))
            continue
        if m.tool_calls or m.tool_results:  # a tool exchange: collapsed lines, opened by a click
            out += tool_entries(m)
            continue
        entry = Entry("message", m.content, role=m.role, note=_note(m), seq=m.seq, created=m.created,
                      who=m.model if m.role == "assistant" else "", reply_to=m.reply_to,
                      pinned=m.seq in pinned, whole=m.status == "complete", images=[i.hash for i in m.images])
        if joined(out, entry):
            continue
        if m.recalled or m.remembered:
            out.append(recall_entry(len(m.recalled), " ".join(
                [*(f"#{s}" for s in m.recalled), *(f"{r.session_id[:8]}#{r.seq}" for r in m.remembered)]),
                len(m.remembered)))
        out.append(entry)
    out += [Entry("marker", mark.marker) for mark in at.values()]  # after the page's last
    return out


def tool_entries(m: MessageInfo) -> list[Entry]:
    """A tool exchange, collapsed: an answer's text (if any) and a line of the calls it makes;
    a tool message's line per result (the tool and its size); each opens to all of it."""
    if m.tool_results:
        return [Entry("fold", f"{r.tool_name} returned {len(r.content.splitlines())} lines", role="tool",
                      seq=m.seq, details=r.content) for r in m.tool_results]
    calls = calls_text(m.tool_calls)
    line = Entry("fold", "called " + ", ".join(c.function.name for c in m.tool_calls), role="assistant",
                 seq=m.seq, details=calls)
    said = [Entry("message", m.content, role="assistant", seq=m.seq, created=m.created, who=m.model,
                  reply_to=m.reply_to)] if m.content.strip() else []
    return [*said, line]


def joined(entries: list[Entry], answer: Entry) -> Entry | None:
    """The entry of `answer`'s question's answers, which it joins as an alternative
    (None: it is its question's first whole answer shown, or cut short)."""
    if answer.role != "assistant" or answer.reply_to < 0 or not answer.whole:
        return None
    for entry in reversed(entries):
        if entry.role == "assistant" and entry.whole and entry.reply_to == answer.reply_to >= 0:
            entry.add_choice(answer)
            return entry
        if 0 <= entry.seq < answer.reply_to:  # back past the question
            return None
    return None


def _note(m: MessageInfo) -> str:
    """What a message's name has beside it: its files, why it stopped, what it rewords."""
    if m.status == "interrupted":
        return stopped(m.error)
    if m.role == "user" and m.alternative_of >= 0:
        return f"reworded #{m.alternative_of}"
    if m.done_reason == "length":
        return f"{CUT}: continue asks it to go on"
    if m.done_reason == "repeating":
        return "stopped: repeating"
    if m.format_error:
        return f"not in the format asked: {m.format_error[:80]}"
    shown = [f.path for f in m.files] + [i.name or "an image" for i in m.images]
    return "attached " + ", ".join(shown) if shown else ""


def recall_entry(count: int, details: str, elsewhere: int = 0, passages=(), cut: str = "") -> Entry:
    """The line above an answer that says what recall (and memory: `elsewhere`, from other
    chats) brought into its prompt, and why it brought less than it found (`cut`)."""
    what = [("an earlier message" if count == 1 else f"{count} earlier messages") if count else "",
            ("1 message of another chat" if elsewhere == 1 else f"{elsewhere} messages of other chats")
            if elsewhere else ""]
    links = {n: (p.session_id, p.seq) for n, p in enumerate(passages) if getattr(p, "session_id", "")}
    said = f"recalled {' and '.join(filter(None, what))} into this question's prompt" if count or elsewhere \
        else "recalled nothing into this question's prompt"
    return Entry("recall", f"{said} (cut: {cut})" if cut else said, details=details, links=links)


def recalled_details(passages) -> str:
    """Each recalled passage on a line: which message (of which chat, for memory's), who,
    and its start."""
    return "\n".join(f"{chat(p)}#{p.seq} {p.role}: {' '.join(p.text[:120].split())}{'…' if len(p.text) > 120 else ''}"
                     for p in passages)


def chat(p) -> str:
    return f"«{p.session_name}» " if getattr(p, "session_id", "") else ""
