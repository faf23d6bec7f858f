"""What the log shows, entry by entry: a message, a compaction's marker line, or the line
that says what recall brought into a prompt; and a history page turned into entries."""

from dataclasses import dataclass

from ...protocol.structs import CompactionMark, MessageInfo
from .words import stopped


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
    #: A "recall" entry's excerpts, shown when it is opened (a click on its line).
    details: str = ""
    expanded: bool = False



#: What can be done with a stored message, by its role.
ACTIONS = {"user": ("copy", "edit", "pin", "branch"), "assistant": ("copy", "retry", "pin", "branch")}


def actions_html(entry: Entry, colour: str) -> str:
    """A stored message's actions, as small links after its name (`act:NAME:SEQ`; Tab
    reaches them)."""
    if entry.kind != "message" or entry.seq < 0:
        return ""
    links = " · ".join(f'<a href="act:{name}:{entry.seq}" style="color:{colour}; '
                       f'text-decoration: none;">{name}</a>' for name in ACTIONS.get(entry.role, ()))
    return f' &nbsp;<span style="font-size: small;">{links}</span>' if links else ""


def entries_of(messages: list[MessageInfo], marks: list[CompactionMark]) -> list[Entry]:
    """A history page as the log shows it: each compaction's line where it happened (in
    place of the summary it wrote), the messages in between."""
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
        note = ""
        if m.files:
            note = "attached " + ", ".join(f.path for f in m.files)
        if m.status == "interrupted":
            note = stopped(m.error)
        if m.recalled:
            out.append(recall_entry(len(m.recalled), " ".join(f"#{s}" for s in m.recalled)))
        out.append(Entry("message", m.content, role=m.role, note=note,
                         who=m.model if m.role == "assistant" else "", seq=m.seq))
    out += [Entry("marker", mark.marker) for mark in at.values()]  # after the page's last
    return out


def recall_entry(count: int, details: str) -> Entry:
    """The line above an answer that says what recall brought into its prompt."""
    what = "an earlier message" if count == 1 else f"{count} earlier messages"
    return Entry("recall", f"recalled {what} into this question's prompt", details=details)


def recalled_details(passages) -> str:
    """Each recalled passage on a line: which message, who, and its start."""
    return "\n".join(f"#{p.seq} {p.role}: {p.text[:120]}{'…' if len(p.text) > 120 else ''}"
                     for p in passages)
