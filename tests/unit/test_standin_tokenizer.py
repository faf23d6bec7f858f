"""The stand-in's tokenizer (tests/standin_parts.py) counts what its definition says: special
tokens 1, a word of n ASCII letters ceil(n/4), every digit, symbol, newline and character of
another script 1, other blanks nothing."""

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from standin_parts import SPECIAL, count_tokens


def by_definition(text: str) -> int:
    """The definition, piece by piece."""
    total = len(SPECIAL.findall(text))
    for piece in re.findall(r"[A-Za-z]+|\d|\n|[^\sA-Za-z\d]", SPECIAL.sub(" ", text)):
        total += math.ceil(len(piece) / 4) if piece[0].isalpha() else 1
    return total


PARTS = st.sampled_from(["<|im_start|>", "<|im_end|>", "word", "extraordinarily", "a", " ", "  ", "\t",
                         "\n", "\r\n", "42", "٣", "é", "ß", "漢字", "—", "!?", "\u00a0", "x1y"])


@given(st.lists(st.one_of(PARTS, st.text(max_size=8)), max_size=40))
def test_the_count_is_the_definitions(parts):
    text = "".join(parts)
    assert count_tokens(text) == by_definition(text)


def test_a_known_count():
    # the two special tokens, "system" 2, "hello" 2, the newline, the four digits, the stop
    assert count_tokens("<|im_start|>system hello\n<|im_end|> 2026.") == 2 + 2 + 2 + 1 + 4 + 1
