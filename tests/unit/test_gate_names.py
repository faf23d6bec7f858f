"""The names recall's gate reads in a message (recall/gate.py `names`): a word with a capital
or a digit that does not open a sentence, and the words of one name together."""

from ctxkeep.daemon.recall.gate import names


def test_a_name_is_a_capital_or_a_digit_inside_a_sentence():
    assert names("Where does Alice live these days?") == [frozenset({"alic"})]
    assert names("What does Person3 collect?") == [frozenset({"person3"})]
    assert names("Define entropy in two sentences.") == []  # a sentence's first word is no name
    assert names("Fine. Then the fish tank?") == []
    assert names("how is bubbles?") == []


def test_the_words_of_one_name_go_together():
    assert names("Who painted The Starry Night?") == [frozenset({"starri", "night"})]
    assert names("Is the roof with Hartley & Sons?") == [frozenset({"hartley", "son"})]


def test_names_written_with_any_alphabet_s_capitals():
    assert names("Is Émile still in Kraków?") == [frozenset({"émile"}), frozenset({"kraków"})]
