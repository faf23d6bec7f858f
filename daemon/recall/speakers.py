"""Who speaks in a session whose messages open with their writer's name ("Caroline: Hey Mel!"),
as a chat log does when it is imported or replayed into a session: a message from outside the
chat (not in either writer's voice) asks about what was said in it, and where it names one of
them, of that writer's words first ("Where does Caroline live these days?", "How many kids does
Melanie have?"). Such a question says no "my", "I" or "you said" (select.about_the_past), and
the name it gives is in every message of its writer, so its words alone tell nothing apart.
"""

import re
from collections import Counter
from dataclasses import dataclass, field

from ctxkeep.daemon.retrieval.lexical import unstamped

#: A writer's name opening a message: one to three capitalized words, then a colon.
LABEL = re.compile(r"\s*([A-Z][\w'.-]{0,30}(?: [A-Z][\w'.-]{0,30}){0,2}):\s")
#: A role's messages that must open with the same name for it to be that role's writer, at
#: least this many and at least this share of them.
LEAST = 5
SHARE = 0.5


def label(text: str) -> str:
    """The writer's name a message opens with ("" if none), after any time stamp."""
    found = LABEL.match(unstamped(text[:200]))
    return found.group(1) if found else ""


@dataclass
class Speakers:
    """The names each role's messages open with, counted as the session's messages are indexed."""

    labels: dict[str, Counter[str]] = field(default_factory=dict)
    messages: Counter[str] = field(default_factory=Counter)

    def add(self, role: str, content: str) -> None:
        if role not in ("user", "assistant"):
            return
        self.messages[role] += 1
        name = label(content)
        if name:
            self.labels.setdefault(role, Counter())[name] += 1

    def writers(self) -> dict[str, str]:
        """Each role's writer, where most of its messages (LEAST, SHARE) open with one name."""
        out = {}
        for role, counts in self.labels.items():
            name, count = counts.most_common(1)[0]
            if count >= LEAST and count >= SHARE * self.messages[role]:
                out[role] = name
        return out

    def outside(self, text: str) -> bool:
        """Whether a message comes from outside a chat log (the session has writers, and it is
        in neither's voice): what it asks is about the chat."""
        writers = self.writers()
        return bool(writers) and label(text) not in writers.values()

    def asked_of(self, text: str) -> str | None:
        """The role whose writer a message from outside the chat names (by their first name,
        as a word), where it names exactly one of them; None for a message in a writer's own
        voice, one naming both or neither, and a session whose messages name no writer."""
        if not self.outside(text):
            return None
        named = [role for role, name in self.writers().items()
                 if re.search(rf"(?<![\w-]){re.escape(name.split()[0])}(?![\w-])", text)]
        return named[0] if len(named) == 1 else None
