"""Who speaks in a session that is a chat log between two people, as one imported or replayed
into a session is: a message from outside the chat asks about what was said in it, and where it
names one of them, of that person's words first ("Where does Caroline live these days?", "How
many kids does Melanie have?"). Such a question says no "my", "I" or "you said"
(asking.about_the_past), so without this it would be taken for an everyday request.

Each role's person is known by either of two signs:
- **the writer's name** most of its messages open with ("Caroline: Hey Mel!"). A message in
  neither writer's voice comes from outside the chat. The name a question gives is then in
  every message of its writer, so its words alone tell nothing apart.
- **the name the other role addresses it by** ("Hey Caroline!", "Thanks, Caroline, that means
  a lot.", "that's so you, Caroline."), where the messages do not open with names. Each writer
  is then one role, and a message that names either person, not to address them, is about the
  chat ("Where does Caroline live these days?" written in a role: no one asks that of
  themselves). The name is rarely in the passages that answer, and recall would otherwise take
  only the greetings that hold it (gate.about).
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
#: A name one writer addresses the other by (a word written as a name, MENTION): after a
#: greeting or a thanks ("Hey Caroline!", "Thanks, Caroline,"), or set off by a comma at the
#: end of a sentence ("so you, Caroline."); not before a colon ("Free, Premium: $3/month").
MENTION = re.compile(r"(?<![\w'-])[A-Z][a-z][\w'-]{0,30}")
_GREETED = re.compile(r"\b(?i:hey|hi|hello|hiya|thanks|thank you|congrats|congratulations|dear|bye|good morning|"
                      r"morning|good night|miss you|love you)\s*,?\s+$")
_SET_OFF = re.compile(r",\s+$")
_AFTER_GREETED = re.compile(r"\s*(?:[,!?.;]|$)")
_AFTER_SET_OFF = re.compile(r"\s*(?:[!?.;]|$)")
#: The share of the times a name is addressed that must come from one role for it to name the
#: other; and the share of that role's mentions of it that must address it (not the characters
#: of a story it writes, who address each other: "Of course, Ruth.").
ONE_SIDED = 0.8
ADDRESSING = 0.5
#: How a message from outside a chat speaks of its two people without naming them.
_OF_THEM = re.compile(r"\b(?:they|them|their|theirs|either|both|anyone|anybody|someone|somebody|"
                      r"each other|one another)\b", re.I)


def names(text: str) -> tuple[list[str], list[str]]:
    """The words a message writes as names (MENTION), and those it addresses its reader by."""
    mentioned, greeted = [], []
    for found in MENTION.finditer(text):
        name, start, end = found.group(), found.start(), found.end()
        mentioned.append(name)
        before = text[max(0, start - 24):start]
        after = _AFTER_GREETED if _GREETED.search(before) else _AFTER_SET_OFF if _SET_OFF.search(before) else None
        if after is not None and after.match(text, end):
            greeted.append(name)
    return mentioned, greeted


def addressed(text: str) -> list[str]:
    """The names a message addresses its reader by (`names`)."""
    return names(text)[1]


def label(text: str) -> str:
    """The writer's name a message opens with ("" if none), after any time stamp."""
    found = LABEL.match(unstamped(text[:200]))
    return found.group(1) if found else ""


@dataclass
class Speakers:
    """The names each role's messages open with, counted as the session's messages are indexed."""

    labels: dict[str, Counter[str]] = field(default_factory=dict)
    messages: Counter[str] = field(default_factory=Counter)
    #: The names each role's messages address their reader by (`addressed`), and all the words
    #: they write as names (MENTION).
    greetings: dict[str, Counter[str]] = field(default_factory=dict)
    mentions: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, role: str, content: str) -> None:
        if self.add_label(role, content):
            mentioned, greeted = names(content[:2000])
            self.greetings.setdefault(role, Counter()).update(greeted)
            self.mentions.setdefault(role, Counter()).update(mentioned)

    def add_label(self, role: str, content: str) -> bool:
        """Count a message and the writer's name it opens with, only (`writers` knows a chat
        log's people by these alone; memory keeps no more of every session). False for a
        message of neither role."""
        if role not in ("user", "assistant"):
            return False
        self.messages[role] += 1
        name = label(content)
        if name:
            self.labels.setdefault(role, Counter())[name] += 1
        return True

    def writers(self) -> dict[str, str]:
        """Each role's writer, where most of its messages (LEAST, SHARE) open with one name."""
        out = {}
        for role, counts in self.labels.items():
            name, count = counts.most_common(1)[0]
            if count >= LEAST and count >= SHARE * self.messages[role]:
                out[role] = name
        return out

    def addressees(self) -> dict[str, str]:
        """Each role's person by the name the other role addresses it by, where it is addressed
        so at least LEAST times, nearly always by that other role (ONE_SIDED), mostly where that
        role writes it at all (ADDRESSING), and more than by any other name."""
        out = {}
        for role, other in (("user", "assistant"), ("assistant", "user")):
            counts = self.greetings.get(other)
            if not counts:
                continue
            name, count = counts.most_common(1)[0]
            if count >= LEAST and count >= ONE_SIDED * (count + self.greetings.get(role, Counter())[name]) \
                    and count >= ADDRESSING * self.mentions[other][name]:
                out[role] = name
        return out

    def outside(self, text: str) -> bool:
        """Whether a message comes from outside a chat log: what it asks is about the chat. Where
        the messages open with their writers' names, one in neither's voice; where each writer
        is a role, one that names either, not to address them."""
        writers = self.writers()
        if writers:
            return label(text) not in writers.values()
        return bool(self._named(self.addressees(), text))

    def about_them(self, text: str) -> bool:
        """Whether a message from outside the chat asks about its two people: it names either,
        or speaks of them ("the one of them who took in a husky", "did anyone mention Lisbon?"). An
        everyday request written beside an imported chat log ("what is the capital of
        Canada?") does not: recall adds to it only what it adds to any message (gate.py)."""
        if not self.outside(text):
            return False
        return bool(_OF_THEM.search(text)) or bool(self._named(self.writers() or self.addressees(), text))

    def asked_of(self, text: str) -> str | None:
        """The role whose person a message from outside the chat names (by their first name,
        as a word), where it names exactly one of them; None for a message in a writer's own
        voice, one naming both or neither, and a session that is no chat log."""
        if not self.outside(text):
            return None
        named = self._named(self.writers() or self.addressees(), text)
        return named[0] if len(named) == 1 else None

    def unnamed(self, text: str, role: str | None) -> str:
        """`text` without the first name of `role`'s person (as `asked_of` gives it), where a
        question names them: which role's words it asks of says who; the name itself is in
        every message of that writer, or only in the other's greetings ("Hey Caroline!"), and
        would rank those, by words and by meaning, above what the question asks about."""
        person = (self.writers() or self.addressees()).get(role) if role else None
        if not person:
            return text
        first = re.escape(person.split()[0])
        return re.sub(rf"\s*(?<![\w-]){first}(?:'s)?(?![\w-])", "", text)

    @staticmethod
    def _named(people: dict[str, str], text: str) -> list[str]:
        """The roles whose person `text` names, other than to address them."""
        if not people:  # no chat log: nothing to name (and no names to look for)
            return []
        greeted = set(addressed(text))
        return [role for role, name in people.items() if name.split()[0] not in greeted
                and re.search(rf"(?<![\w-]){re.escape(name.split()[0])}(?![\w-])", text)]
