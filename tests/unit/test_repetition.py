"""An answer that repeats itself is stopped (turns/repetition.py): within a few repeats of
its loop, and never for text that only says a word or phrase again."""

import random

from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.turns.repetition import RepetitionWatch

PROSE = ("The garden needs water most in the evening, when the soil is still warm and the roots can take "
         "it up before night. Tomatoes like it deep and rare; lettuce wants it shallow and often. A mulch "
         "of straw keeps the moisture in, and the slugs, sadly, love it too.").split()


def streamed(watch: RepetitionWatch, text: str, piece: int = 7) -> int | None:
    """Feed `text` in pieces; the characters fed when the watch stopped it (None: never)."""
    for at in range(0, len(text), piece):
        if watch.add(text[at:at + piece]):
            return at + piece
    return None


@given(st.integers(5, 40), st.integers(0, 60), st.randoms(use_true_random=False))
def test_a_loop_is_stopped_within_a_few_repeats_of_it(run, before, rng):
    loop = " ".join(["Well,", "then", "again"] + [rng.choice(PROSE) for _ in range(run - 3)]) + " "
    start = " ".join(rng.choice(PROSE) for _ in range(before)) + " "
    text = start + loop * 40
    stopped = streamed(RepetitionWatch(times=3), text)
    assert stopped is not None
    words_after_first_repeat = len(text[len(start) + len(loop):stopped].split())
    assert words_after_first_repeat <= max(3 * run, 30) + 10  # well within 200 tokens


def test_prose_and_short_repeats_are_never_stopped():
    rng = random.Random(1)
    prose = " ".join(rng.choice(PROSE) for _ in range(2000))
    assert streamed(RepetitionWatch(times=3), prose) is None
    emphatic = "No, no, no. I said no. " + " ".join(PROSE) + " Very, very, very good. " + " ".join(PROSE)
    assert streamed(RepetitionWatch(times=3), emphatic) is None
    assert streamed(RepetitionWatch(times=0), "I am here to help. " * 200) is None  # off
    matrix = "[" + ", ".join(["0"] * 400) + "]"  # repeats by design, not a loop of words
    table = "| a | b |\n" + "| --- | --- |\n" + "| 1 | 2 |\n" * 200
    assert streamed(RepetitionWatch(times=3), matrix) is None and streamed(RepetitionWatch(times=3), table) is None


class FirstWatch(RepetitionWatch):
    """The watch as first written: each look compares every word of each run length."""

    def looping(self) -> bool:
        words, n = self.words, len(self.words)
        for run in range(1, 81):
            span = run * self.times
            if span > n:
                break
            if span < 24:
                continue
            if all(words[i] == words[i - run] for i in range(n - span + run, n)) and \
                    len({w for w in words[n - run:] if any(c.isalpha() for c in w)}) >= 3:
                return True
        return False


WORDS = PROSE[:12] + ["0", "|", "---", "Anna", "again", "well"]


@given(st.lists(st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30), st.integers(1, 12)),
                max_size=12), st.integers(2, 4), st.integers(1, 9))
def test_the_watch_stops_where_the_first_one_did(parts, times, piece):
    """Runs of words said over and over, prose between them, one word or a table's cells
    repeated: the answer stops at the same character as with the watch as first written."""
    text = "".join((" ".join(run) + " ") * count for run, count in parts)
    assert streamed(RepetitionWatch(times=times), text, piece) == streamed(FirstWatch(times=times), text, piece)
