"""An answer that repeats itself is stopped: a small model caught in a loop ("I am here to help.
I am here to help. …") writes to its cap — 2,048 tokens, minutes on a CPU — for nothing. Its
recent words are watched as they stream; once the same run of words comes back `times` times
in a row (and the repeats are long enough not to be a figure of speech), the answer stops
there, is kept, and says so ("stopped: repeating")."""

import re
from dataclasses import dataclass, field

#: What the answer's stop says it stopped for (its done_reason).
REPEATING = "repeating"
_WORD = re.compile(r"\S+")
#: The longest run of words looked for as a repeat, and the fewest words its repeats must
#: cover together ("no, no, no" is speech; thirty words said three times over is a loop).
LONGEST_RUN = 80
LEAST_WORDS = 24
#: The fewest different words (with letters) a repeated run must hold to be a loop.
DISTINCT = 3
#: Words kept to look back over, and how often (in new words) the answer is looked at.
KEPT = 4 * LONGEST_RUN
EVERY = 4


@dataclass
class RepetitionWatch:
    """Watches one answer's words; `times` = 0 never stops it. For each run length r it keeps
    how many words in a row, up to the newest, equal the word r before them (`streaks`), so a
    look costs one step per length, not a comparison of every word (an answer that repeats
    one word by design, "0 0 0 …", made every look compare all of them: ~0.16 ms a word)."""

    times: int = 3
    words: list[str] = field(default_factory=list)
    streaks: list[int] = field(default_factory=lambda: [0] * (LONGEST_RUN + 1))
    _since: int = 0
    _tail: str = ""

    def add(self, text: str) -> bool:
        """Take streamed text in; True once the answer repeats itself."""
        if not self.times:
            return False
        text = self._tail + text
        found = _WORD.findall(text)
        # the last word may go on in the next chunk: keep it back until a space follows it
        self._tail = found.pop() if found and not text[-1:].isspace() else ""
        for word in found:
            self._take(word.lower().strip(".,;:!?\"'"))
        if len(self.words) > KEPT:
            del self.words[:len(self.words) - KEPT]
        self._since += len(found)
        if self._since < EVERY:
            return False
        self._since = 0
        return self.looping()

    def _take(self, word: str) -> None:
        back = self.words[:-LONGEST_RUN - 1:-1]  # the word 1, 2, … LONGEST_RUN before it
        self.streaks[1:len(back) + 1] = [s + 1 if w == word else 0 for s, w in zip(self.streaks[1:], back)]
        self.words.append(word)

    def looping(self) -> bool:
        """Whether the last words are one run said `times` times in a row, a run of words said
        again (three different ones with letters at least), not a table, a matrix or a ruler
        that repeats by design ("0 0 0 …", "| --- | --- |")."""
        words, n = self.words, len(self.words)
        said: set[str] = set()  # the words with letters of the last `upto` words
        upto = 0
        for run in range(1, LONGEST_RUN + 1):
            span = run * self.times
            if span > n:
                break
            if span < LEAST_WORDS or self.streaks[run] < span - run:
                continue
            said.update(w for w in words[n - run:n - upto] if _has_letters(w))
            upto = run
            if len(said) >= DISTINCT:
                return True
        return False


def _has_letters(word: str) -> bool:
    return any(c.isalpha() for c in word)
