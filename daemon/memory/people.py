"""The people of the chat logs memory holds: the writers' names each session's lines open with
(retrieval/speakers.py `writers`). A question asked in another session that names one of them
("How many kids does Melanie have?", in a new chat after importing Caroline's and Melanie's
log) asks of the past, as it does in the log's own session, though it says no "my" or "you
said" (asking.about_the_past): memory then ranks it as such a question."""

from dataclasses import dataclass, field

import numpy as np

from ctxkeep.daemon.retrieval.speakers import MENTION, Speakers, label


@dataclass
class People:
    """Per session (memory's owner number), the names its lines open with; the writers' first
    names, each with the sessions they write in."""

    speakers: dict[int, Speakers] = field(default_factory=dict)
    by_name: dict[str, set[int]] = field(default_factory=dict)

    def add(self, owner: int, role: str, content: str) -> None:
        self.speakers.setdefault(owner, Speakers()).add_label(role, content)

    def settle(self, owner: int) -> None:
        """The owner's messages were added: its writers (if it is a chat log) are known by name."""
        found = self.speakers.get(owner)
        for name in found.writers().values() if found is not None else ():
            self.by_name.setdefault(name.split()[0], set()).add(owner)

    def named(self, text: str, allowed: np.ndarray) -> bool:
        """Whether `text`, not in a writer's voice, names a writer of a chat log memory may bring
        back (`allowed`, per owner number)."""
        if not self.by_name or label(text):
            return False
        return any(allowed[o] for word in MENTION.findall(text) for o in tuple(self.by_name.get(word, ())))
