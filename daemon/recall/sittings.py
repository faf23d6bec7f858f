"""The sittings of a conversation: stretches of it between pauses, each opened by the user's
first message after the pause — what the sitting is about ("I'm looking to upgrade my camera
flash … my Sony A7R IV", where its follow-ups say "I'll go with the Godox"). A follow-up
recall finds alone leaves unsaid what it follows up, so recall offers its sitting's opening
too (`Sittings.with_openings`)."""

from collections.abc import Callable
from dataclasses import dataclass, field

from ctxkeep.daemon.retrieval.lexical import terms, unstamped
from ctxkeep.daemon.retrieval.passages import Passage

#: The pause (seconds) after which the next message opens a new sitting of the conversation.
SITTING_GAP = 30 * 60
#: The messages after its opening that a sitting's opening still says what they are about: a
#: long chat without a pause moves on to other things (LongMemEval's chats with an assistant:
#: 12 messages a session at the median, 21 at the 99th percentile).
SITTING_REACH = 40
#: What the opening of a sitting scores beside the best passage of that sitting a question
#: finds.
OPENING_WEIGHT = 0.5
#: The fewest terms a user's message has to open a sitting: a greeting ("hey", "hello
#: again!") or a bare time stamp says nothing of what the sitting is about; the first
#: message after it that does opens it.
OPENING_TERMS = 3


@dataclass
class Sittings:
    """Each passage's sitting's opening, as the passages are said, in order."""

    #: The passage id of each passage's sitting's opening (-1: none).
    openings: list[int] = field(default_factory=list)
    #: When the last passage was said, and its sitting's opening: (passage id, seq), or
    #: (-1, -1) for none yet and (-2, -1) for none until the next pause (past SITTING_REACH).
    _last: float = float("-inf")
    _opening: tuple[int, int] = (-1, -1)

    def add(self, pid: int, p: Passage) -> None:
        """Passage `pid` (`p`) was said next."""
        opening, seq = self._opening
        if p.created - self._last > SITTING_GAP:
            opening, seq = -1, -1
        elif opening >= 0 and p.seq - seq > SITTING_REACH:
            opening, seq = -2, -1
        if opening == -1 and p.role == "user" and p.part == 0 and says_what(p.text):
            opening, seq = pid, p.seq
        self._last, self._opening = max(self._last, p.created), (opening, seq)
        self.openings.append(max(opening, -1))

    def with_openings(self, scores: dict[int, float], skip: Callable[[int], bool]) -> dict[int, float]:
        """The scores with each passage's sitting's opening (but those `skip` names) raised
        to OPENING_WEIGHT of that passage's score."""
        out = dict(scores)
        for pid, s in scores.items():
            first = self.openings[pid]
            if first >= 0 and first != pid and not skip(first):
                out[first] = max(out.get(first, 0.0), OPENING_WEIGHT * s)
        return out


def says_what(text: str) -> bool:
    """Whether a message can open a sitting: it has OPENING_TERMS terms beside its stamps."""
    return len(terms(unstamped(text))) >= OPENING_TERMS
