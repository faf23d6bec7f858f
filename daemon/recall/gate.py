"""Whether a message asks anything of its session's past (a pure rule over the session's
index): recall adds nothing to one that does not. A message that speaks of the past ("my",
"I", "you said", "last time": asking.about_the_past) always may; any other ("write a poem
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
gives (a word written with a capital inside a sentence, `names`), whole in a best match.
Where vectors are at hand, that best match must be among the nearest by meaning too: words
meet by chance in a long chat ("affect" and "effect" in one sentence of a pasted essay, "Canada" in
an answer about car insurance, for "What is the capital city of Canada?"), and what the
message is about is said in a turn that is about it (a message that refers back, "these
days", is embedded with the turn before it, and its vector cannot say: words decide). Where
its vector comes too late for that check (the embedding model busy), nothing is recalled for
it (recaller `_about`): by words alone the same request would get a block on a busy turn
that it does not get on a quiet one. Recall for such a message then takes only the passages
that are about it (`about`), not whatever else its words rank."""

import re
from collections.abc import Callable, Iterable, Sequence

from ctxkeep.daemon.memory.precision import STRONG_TOP
from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.retrieval.asking import refers_back
from ctxkeep.daemon.retrieval.lexical import terms

#: A word held by at most this share of the session's passages (or RARE_LEAST) says what a
#: message that does not speak of the past is about: stricter than memory's rare words (7.5 %
#: there), as a long chat says its everyday words ("translate", "difference") over and over.
RARE_SHARE = 0.02
RARE_LEAST = 3
#: The most of a message's specific words a passage must hold to be about it.
NEEDED = 2
#: Where vectors are at hand, a passage is about a message that does not speak of the past
#: only when it is among this share of the session's passages nearest the message in meaning
#: too (about 2 deviations out, were cosines spread normally), or among the NEAREST_LEAST
#: nearest in a short chat; ties all count, so vectors that tell nothing apart veto nothing.
NEAREST = 0.025
NEAREST_LEAST = 10
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


def about(index: SessionIndex, message: str, own: Iterable[str]) -> Callable[[int], bool] | None:
    """For a message that does not speak of the past (its own terms `own`): whether a passage
    is about it — it holds two of the message's specific words (one where it has only one) or
    one of its names whole. None where no passage can be: the message has no word few
    passages hold, or it follows up the turn before with one word of its own."""
    own = frozenset(own)
    rare = index.lexical.rare(own, share=RARE_SHARE, least=RARE_LEAST)
    if not rare:
        return None  # as `may_ask` says before the ranking
    # those no passage holds count too ("entropy" in "define entropy in two sentences"), but
    # for numbers: "turn 12", "15 %" say which or how much, not what about
    specific = rare | {t for t in index.lexical.rare(own, share=RARE_SHARE, least=RARE_LEAST, unseen=True)
                       if not t.isdigit()}
    if len(specific) < 2 and refers_back(message):
        return None  # a follow-up: its one word of its own ("shorter", "simply") says how, not what
    least = min(NEEDED, len(specific))
    named = [name for name in names(message) if name & rare]

    def holds(pid: int) -> bool:
        held = index.term_set(pid)
        return len(rare & held) >= least or any(name <= held for name in named)
    return holds


def near_too(holds: Callable[[int], bool], nearest: set[int]) -> Callable[[int], bool]:
    """`holds` where the passage is also among the `nearest` by meaning (NEAREST)."""
    return lambda pid: pid in nearest and holds(pid)


def asks_of_the_past(best: Sequence[int], about_the_past: bool, on_topic: Callable[[int], bool] | None) -> bool:
    """Whether recall may add to a turn (`best`: its message's best passages by words, best
    first): one whose message speaks of the past always may; any other where one of its best
    is `on_topic` (`about`, and where vectors are at hand among the nearest by meaning too)."""
    return about_the_past or (on_topic is not None and any(map(on_topic, best[:STRONG_TOP])))
