"""What costs tokens in a text: its features, shared by everything that counts (the file
reader, the estimator). A feature vector counts what costs tokens differently in every
tokenizer: Latin letters and words, other scripts, digits, symbols, newlines, other
whitespace, and one template cost per message. Every count is additive over texts joined
by a non-letter, so a prompt's vector is the sum of its parts' vectors."""

import re
import string
from collections import Counter
from functools import cache, lru_cache
from typing import Any

#: Latin letters, Latin words, other letters, digits, symbols, newlines, other
#: whitespace, images, messages.
FEATURES = 9
#: Where the images a prompt shows the model are counted (a fixed cost each, per model).
IMAGES = 7
Vector = tuple[float, ...]
ZERO: Vector = (0.0,) * FEATURES
#: The template cost of one message.
ONE: Vector = (0.0,) * (FEATURES - 1) + (1.0,)
#: One image the model sees.
IMAGE: Vector = tuple(1.0 if i == IMAGES else 0.0 for i in range(FEATURES))
#: A cautious prior: above most tokenizers on every kind of text until the first exact count
#: (and above what most vision models spend on an image: 256 for gemma3, 576 for llava).
PRIOR = (0.25, 0.5, 1.0, 1.0, 1.0, 1.0, 0.1, 768.0, 6.0)

#: What each feature counts, as regular expressions (`by_expressions`); the text is counted
#: faster (`_features`), with the same counts (tests/unit/test_edges.py).
_LATIN = re.compile(r"[A-Za-z]")
_LATIN_WORDS = re.compile(r"[A-Za-z]+")
_LETTERS = re.compile(r"[^\W\d_]")
_DIGITS = re.compile(r"\d")
_SPACE = re.compile(r"[^\S\n]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


#: A longer text is counted in slices of about this many characters, cut at a space: each
#: count holds the interpreter for one slice at a time, so counting a long
#: text in a worker thread lets the event loop run between slices.
SLICE = 1 << 16


def text_features(text: str) -> Vector:
    """Features of a text, without any per-message cost."""
    if len(text) <= SLICE:
        return _features(text)
    total = [0.0] * FEATURES
    start = 0
    while start < len(text):
        end = min(len(text), start + SLICE)
        if end < len(text):
            space = text.rfind(" ", start + SLICE // 2, end)  # words do not cross a space
            end = space + 1 if space >= 0 else end
        for i, value in enumerate(_features(text[start:end])):
            total[i] += value
        start = end
    return tuple(total)


#: System texts kept counted (a system prompt, a goal block, a checkpoint block of some
#: thousand characters each; a session's are the same from turn to turn).
PARTS_KEPT = 64


@lru_cache(maxsize=PARTS_KEPT)
def part_features(text: str) -> Vector:
    """`text_features` of a text every estimate of a session's prompt counts again (its system
    prompt, goals and checkpoints: several times a turn), counted once."""
    return text_features(text)


#: ASCII text (most of it: code, English) is counted by byte translation, ~14x faster than
#: the regular expressions, with the same counts (tests/unit/test_edges.py).
_LETTER_BYTES = string.ascii_letters.encode()
_DIGIT_BYTES = string.digits.encode()
#: What `[^\S\n]` matches in ASCII: the whitespace but the newline, str.isspace's.
_SPACE_BYTES = bytes(c for c in range(128) if chr(c).isspace() and chr(c) != "\n")
#: Letters to "a", all else to a space: the words are what splitting on spaces leaves.
_WORD_TABLE = bytes(0x61 if chr(c).isascii() and chr(c).isalpha() else 0x20 for c in range(256))


#: A text beyond ASCII at least this long is counted by a table of every character's feature
#: (`_wide_features`); a shorter one character by character (`_mixed_features`).
WIDE = 512
#: Where the expressions count a character: its feature's index (a Latin letter, another
#: script's letter or numeral, a digit, a symbol, a newline, another space).
LATIN, OTHER, DIGIT, SYMBOL, NEWLINE, SPACE = 0, 2, 3, 4, 5, 6


def _features(text: str) -> Vector:
    if text.isascii():
        return _ascii_features(text.encode("ascii"))
    return _mixed_features(text) if len(text) < WIDE else _wide_features(text)


def _kind(char: str) -> int:
    r"""Where the expressions count one character (\s is str.isspace, \d str.isdecimal, and
    \w str.isalnum or "_")."""
    if char.isascii() and char.isalpha():
        return LATIN
    if char == "\n":
        return NEWLINE
    if char.isspace():
        return SPACE
    if char.isdecimal():
        return DIGIT
    return OTHER if char.isalnum() else SYMBOL


def _mixed_features(text: str) -> Vector:
    """A text with a few characters beyond ASCII: its ASCII counted by byte translation with
    each other character as a symbol ("?"), then each of those moved to where the expressions
    count it (a dash or an accent in Latin text)."""
    counts = list(_ascii_features(text.encode("ascii", "replace")))
    for char, n in Counter(_NON_ASCII.findall(text)).items():
        counts[_kind(char)] += n
        counts[SYMBOL] -= n
    return tuple(counts)


@cache
def _kinds() -> Any:
    """`_kind` of every character of Unicode's first plane, as a NumPy array (built once, in
    ~25 ms: most of what any script writes)."""
    import numpy as np
    return np.fromiter((_kind(chr(c)) for c in range(0x10000)), dtype=np.uint8, count=0x10000)


def _wide_features(text: str) -> Vector:
    """A longer text beyond ASCII, every character looked up at once (~35 µs for 5,000
    characters of any script, where the expressions take 0.35-0.7 ms)."""
    import numpy as np
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    plane = codes < 0x10000
    kinds = _kinds()[np.where(plane, codes, 0)]
    if not plane.all():  # emoji and the like: each looked at
        beyond = np.flatnonzero(~plane)
        kinds[beyond] = [_kind(chr(c)) for c in codes[beyond].tolist()]
    counts = np.bincount(kinds, minlength=FEATURES).astype(float)
    latin = kinds == LATIN
    counts[1] = np.count_nonzero(latin[:1]) + np.count_nonzero(latin[1:] & ~latin[:-1])  # runs of Latin letters: words
    return tuple(counts.tolist())


def by_expressions(text: str) -> Vector:
    """A text's features by their definition, the regular expressions (slow: what the faster
    paths are held to)."""
    latin = len(_LATIN.findall(text))
    words = len(_LATIN_WORDS.findall(text))
    other = len(_LETTERS.findall(text)) - latin
    digits = len(_DIGITS.findall(text))
    newlines = text.count("\n")
    space = len(_SPACE.findall(text))
    symbols = len(text) - latin - other - digits - newlines - space
    return (float(latin), float(words), float(other), float(digits), float(symbols),
            float(newlines), float(space), 0.0, 0.0)


def _ascii_features(data: bytes) -> Vector:
    size = len(data)
    latin = size - len(data.translate(None, _LETTER_BYTES))
    words = len(data.translate(_WORD_TABLE).split())
    digits = size - len(data.translate(None, _DIGIT_BYTES))
    newlines = data.count(b"\n")
    space = size - len(data.translate(None, _SPACE_BYTES))
    symbols = size - latin - digits - newlines - space
    return (float(latin), float(words), 0.0, float(digits), float(symbols),
            float(newlines), float(space), 0.0, 0.0)


def widened(stored: list[float] | tuple[float, ...]) -> Vector | None:
    """A stored vector in today's features: as it is, or one from before images were counted
    (8 features: no images) with none; None if it is neither."""
    if len(stored) == FEATURES:
        return tuple(stored)
    if len(stored) == FEATURES - 1:
        return (*stored[:IMAGES], 0.0, *stored[IMAGES:])
    return None


class TokenCount:
    """A text's tokens by the given feature weights (picklable: it goes to file workers)."""

    def __init__(self, weights: list[float]) -> None:
        self.weights = weights

    def __call__(self, text: str) -> int:
        return max(0, round(sum(w * f for w, f in zip(self.weights, text_features(text)))))
