"""Whether a message asks anything of its session's past (a pure rule over the session's
index): recall adds nothing to one that does not. A message that speaks of the past ("my",
"I", "you said", "last time": select.about_the_past) always may; any other ("write a poem
about the first frost", "where does Alice live these days?", "can you make that shorter?")
only where its best matches by words hold a word that says what it is about — one few of
the session's passages hold (two where it has several such words) — or a passage stands out
by meaning. Otherwise its everyday words ("write", "short", "first") would fill the room the
window leaves, on every turn of a long chat, with turns that merely share them. A question
about a person or a thing named in the chat ("Alice", "Person3") still gets recall: the
rule looks at which words matched, not at how the message is phrased."""

from collections.abc import Iterable, Sequence

from ctxkeep.daemon.memory.precision import STRONG_TOP, needed_of
from ctxkeep.daemon.recall.session_index import SessionIndex

#: A word held by at most this share of the session's passages (or RARE_LEAST) says what a
#: message that does not speak of the past is about: stricter than memory's rare words (7.5 %
#: there), as a long chat says its everyday words ("translate", "difference") over and over.
RARE_SHARE = 0.02
RARE_LEAST = 3


def asks_of_the_past(index: SessionIndex, own: Iterable[str], best: Sequence[int], stands_out: bool,
                     about_the_past: bool) -> bool:
    """Whether recall may add to the turn of a message (its own terms `own`; `best`: its
    best passages by words, best first; `stands_out`: a passage stands out by meaning)."""
    if about_the_past or stands_out:
        return True
    own = frozenset(own)
    rare = index.lexical.rare(own, share=RARE_SHARE, least=RARE_LEAST)
    if not rare:
        return False
    least = needed_of(len(index.lexical.rare(own, share=RARE_SHARE, least=RARE_LEAST, unseen=True)))
    return any(len(rare & index.term_set(pid)) >= least for pid in best[:STRONG_TOP])
