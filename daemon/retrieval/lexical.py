"""The words recall ranks by: a text's terms and a question's.

Words are lower-cased, the most common English words left out, and reduced to their
Snowball stems ("moved", "moves" and "moving" are one term), so that a question need not
repeat the words of what it asks about. A question's terms leave out how it asks and counts,
and the time stamps front-ends write (bm25.py ranks passages by them).
"""

import re

import Stemmer

_WORD = re.compile(r"[^\W_]{2,}|\d")
#: Common English words that say nothing of what a text is about (with what is left of a
#: contraction: "I've" is "ve", "don't" "don").
STOP = frozenset("""a about above after again all also am an and any are as at be because been
before being below between both but by can could did do does doing done down during each even
ever few for from further get got had has have having he her here hers herself him himself his
how i if in into is it its itself just let like many me might more most much must my myself no nor
not now of off on once one only or other our ours out over own same shall she should so some
still such than that the their theirs them then there these they this those through to too
under until up very was we well were what when where which while who whom why will with would
yes yet you your yours yourself
ve ll re don isn aren wasn weren doesn didn hasn haven hadn won wouldn couldn shouldn""".split())
_STEMS: dict[str, str] = {}
_STEMMER = Stemmer.Stemmer("english")
#: Stems remembered (the distinct words of many sessions), after which the memo starts over.
_STEMS_KEPT = 200_000


def stem(word: str) -> str:
    found = _STEMS.get(word)
    if found is None:
        if len(_STEMS) >= _STEMS_KEPT:
            _STEMS.clear()
        found = _STEMS[word] = _STEMMER.stemWord(word)
    return found


def terms(text: str) -> list[str]:
    """The text's terms: stems of its words, common words left out."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOP]


#: How a question asks about the past, not what it asks about ("what did I tell you about",
#: "remind me", "we talked about"): in a query these words never make a match on their own.
PHRASING = frozenset(stem(w) for w in """tell told telling remind reminded remember remembered recall
recalled mention mentioned say said saying talk talked talking discuss discussed discussion ask asked
asking know knew think thought earlier previous previously ago last time times chat chatted conversation
again already please thanks thank help""".split())


#: How a question counts or totals ("how many … in total", "the number of", "altogether"):
#: the words ask for a sum, they do not say of what ("the total number of nodes" is no answer
#: to "how many fish in total").
_COUNTING = re.compile(r"\b(?:in total|(?:the )?(?:total )?number of|total of|altogether|all together|"
                       r"in all|combined|put together)\b", re.I)


#: "(do) for a living" asks of work: its "living" stems as "live" does, and would match where
#: someone lives and every living room ("What does Nate do for a living now?").
_FOR_A_LIVING = re.compile(r"\bfor a living\b", re.I)


def asked_terms(text: str) -> list[str]:
    """A message's terms as a query: its terms less the words of how it asks (PHRASING, how
    it counts) and its time stamps, "for a living" as the work it asks of."""
    return [t for t in terms(_FOR_A_LIVING.sub(" work ", _COUNTING.sub(" ", unstamped(text)))) if t not in PHRASING]


#: What the turn before weighs in a query (when asked with it), in all, against the new
#: message's terms: it points at what "it" or "she" is, and never outweighs the message.
CONTEXT_SHARE = 0.5


#: A time stamp as chat front-ends write one into a message ("[2023/05/30 (Tue) 22:26]",
#: "2023-05-30T22:26:00", "Tue, 30 May 2023 22:26"): it says when, not what about, and as
#: terms it would find every other message stamped the same way.
_STAMP = re.compile(
    r"\[?\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"(?:\s*\(?(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?\)?)?(?:,?\s*\d{1,2}:\d{2}(?::\d{2})?)?\]?"
    r"|\b(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+\d{1,2}\s+[a-z]{3,9}\s+\d{4}(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?",
    re.I)


def unstamped(text: str) -> str:
    """`text` without its time stamps (every one has a digit: a text without one is read once)."""
    return _STAMP.sub(" ", text) if _DIGIT.search(text) else text


_DIGIT = re.compile(r"\d")


def has_words(text: str) -> bool:
    """Whether `text` says anything beside its time stamps: a letter or a digit (one is
    enough: "猫" is a word)."""
    return _LETTER.search(unstamped(text)) is not None


_LETTER = re.compile(r"[^\W_]")


def query_terms(message: str | list[str], context: str = "") -> dict[str, float]:
    """A query's terms and their weights: the new message's (or its `asked_terms`, where
    the caller has them) at 1 each time they occur, the turn before's sharing CONTEXT_SHARE
    of the message's weight between them. Time stamps are not terms."""
    own = asked_terms(message) if isinstance(message, str) else message
    weights: dict[str, float] = {}
    around = asked_terms(context)
    if around:
        each = CONTEXT_SHARE * max(1, len(own)) / len(around)
        for term in around:
            weights[term] = weights.get(term, 0.0) + each
    for term in own:
        weights[term] = weights.get(term, 0.0) + 1.0
    return weights
