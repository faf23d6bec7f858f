"""Recall's second hop (LexicalIndex.expansion): the words of what the first hop found that
the question lacks — the name of the one thing found, not a word every match of its kind holds."""

from ctxkeep.daemon.retrieval.bm25 import LexicalIndex
from ctxkeep.daemon.retrieval.lexical import asked_terms, query_terms
from ctxkeep.daemon.retrieval.passages import Passage

NAMES = ["Maya", "Tomas", "Ingrid", "Ravi", "Leona", "Kofi", "Anouk", "Dmitri", "Yuki", "Bram"]
PETS = ["a parrot", "a greyhound", "two cats", "a tortoise", "a rabbit", "a ferret", "a corgi", "a poodle",
        "a hedgehog", "a husky"]
FILLER = "weather tea garden walk book music film cooking travel sleep coffee bread river cloud".split()


def test_the_second_hop_asks_for_the_name_found_not_the_words_of_its_kind():
    texts = [f"By the way, {name} adopted {pet} from the shelter." for name, pet in zip(NAMES, PETS)]
    texts += [f"By the way, {name} lives in a flat in town number {i}." for i, name in enumerate(NAMES)]
    texts += [" ".join(FILLER[(i + j) % len(FILLER)] for j in range(8)) for i in range(1000)]
    index = LexicalIndex()
    index.add(Passage(seq=i, part=0, parts=1, role="user", created=0.0, text=t) for i, t in enumerate(texts))
    query = query_terms(asked_terms("The person who took in a poodle from the shelter — which city are they in?"))
    first = index.rank(query, set(), 200)
    assert texts[first[0][0]] == "By the way, Dmitri adopted a poodle from the shelter."
    asked = index.expansion(first, query)
    assert asked == {"dmitri": 1.0}  # not "adopted", "way": every pet's passage holds them
    found = [texts[pid] for pid, _ in index.rank(asked, set(), 3)]
    assert "By the way, Dmitri lives in a flat in town number 7." in found
