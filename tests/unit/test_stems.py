"""Recall's stems are Snowball's English stems as of Snowball 3.1 (PyStemmer >= 3.1, the
project's own stemmer in C): the recall figures were measured with them. Snowball 3.0 and
2.2 stem these words otherwise ("university" as "univers", "added" as "ad")."""

from ctxkeep.daemon.retrieval.lexical import stem, terms

#: Words whose stems Snowball's English algorithm changed between 2.2, 3.0 and 3.1.
CHANGED = {"added": "add", "adding": "add", "university": "universiti", "evening": "evening",
           "psychologist": "psycholog", "internationally": "internat", "internal": "internal",
           "interval": "interval", "skis": "ski", "paste": "paste", "laterally": "lateral"}


def test_the_stems_are_snowball_3_1s():
    assert {word: stem(word) for word in CHANGED} == CHANGED


def test_a_words_forms_share_a_stem_and_common_words_are_left_out():
    assert terms("She moved, is moving and moves") == ["move", "move", "move"]
    assert terms("Tromsø's glaciers") == terms("tromsø glacier")
