"""Whether a message asks anything of its session's past (a pure rule over the session's
index): recall adds nothing to one that does not. A message that speaks of the past ("my",
"I", "you said", "last time": select.about_the_past) always may; any other ("write a poem
about the first frost", "where does Alice live these days?", "can you make that shorter?")
only where its best matches by words hold what it is about — the words few of the session's
passages hold, two of them where it has two or more such words. Not where a passage only
stands out by meaning: in a long chat some turn always does, for any request ("who painted
The Starry Night?" beside "translate the short note"; with the built-in e5 on the dev split,
half the everyday requests got a block that way), as memory's rule for such a message
(memory/precision.py `strong`) holds too. Otherwise its everyday words ("write", "short",
"first"), or one of them that a few turns happen to hold ("define" in "system-defined"),
would fill the room the window leaves, on every turn of a long chat, with turns that merely
share them. A follow-up of the
turn before ("can you make that shorter?", "say it again more simply") is about that turn,
which the prompt holds. A question about a person or a thing named in the chat still gets
recall: "the fish tank?" by its two words, "where does Alice live these days?" by the name it
gives (a word written with a capital inside a sentence, `names`), whole in a best match."""

import re
from collections.abc import Iterable, Sequence

from ctxkeep.daemon.memory.precision import STRONG_TOP
from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.retrieval.lexical import terms
from ctxkeep.daemon.retrieval.select import refers_back

#: A word held by at most this share of the session's passages (or RARE_LEAST) says what a
#: message that does not speak of the past is about: stricter than memory's rare words (7.5 %
#: there), as a long chat says its everyday words ("translate", "difference") over and over.
RARE_SHARE = 0.02
RARE_LEAST = 3
#: The most of a message's specific words a passage must hold to be about it.
NEEDED = 2
#: The words of a message and the marks that end its sentences.
_TOKEN = re.compile(r"[^\W_][\w'-]*|[.!?:\n]")


def _is_name(word: str) -> bool:
    """A word written with a capital ("Alice", "Émile") or with a digit after letters ("Person3")."""
    return word[0].isupper() or (word[0].isalpha() and any(c.isdigit() for c in word))


def names(message: str) -> list[frozenset[str]]:
    """The terms of each name a message holds: words written as names (`_is_name`) that do
    not open it or a sentence of it, those next to each other as one ("The Starry Night")."""
    found: list[frozenset[str]] = []
    current: list[str] = []
    opening = True
    for token in _TOKEN.findall(message) + ["."]:
        name = not opening and token not in ".!?:\n" and _is_name(token)
        if name:
            current.append(token)
        elif current:
            found.append(frozenset(terms(" ".join(current))))
            current = []
        opening = token in ".!?:\n"
    return [name for name in found if name]


def may_ask(index: SessionIndex, own: Iterable[str], about_the_past: bool) -> bool:
    """Whether `asks_of_the_past` could hold, before any ranking: a message that does not
    speak of the past needs a word few passages hold (else its vector is not worth a round
    trip to the embedding model)."""
    return about_the_past or bool(index.lexical.rare(frozenset(own), share=RARE_SHARE, least=RARE_LEAST))


def asks_of_the_past(index: SessionIndex, message: str, own: Iterable[str], best: Sequence[int],
                     about_the_past: bool) -> bool:
    """Whether recall may add to the turn of `message` (its own terms `own`; `best`: its
    best passages by words, best first)."""
    if about_the_past:
        return True
    own = frozenset(own)
    rare = index.lexical.rare(own, share=RARE_SHARE, least=RARE_LEAST)
    if not rare:
        return False  # as `may_ask` says before the ranking
    # those no passage holds count too ("entropy" in "define entropy in two sentences"), but
    # for numbers: "turn 12", "15 %" say which or how much, not what about
    specific = rare | {t for t in index.lexical.rare(own, share=RARE_SHARE, least=RARE_LEAST, unseen=True)
                       if not t.isdigit()}
    if len(specific) < 2 and refers_back(message):
        return False  # a follow-up: its one word of its own ("shorter", "simply") says how, not what
    least = min(NEEDED, len(specific))
    named = [name for name in names(message) if name & rare]
    return any(len(rare & held) >= least or any(name <= held for name in named)
               for held in map(index.term_set, best[:STRONG_TOP]))
