"""What memory may bring into a turn must be about its message (pure rules over memory's
index): nothing unless a best match is strong, only passages that are about the message,
statements before questions, from the sessions that match best."""

from collections.abc import Sequence

from ctxkeep.daemon.memory.index import MemoryIndex
from ctxkeep.daemon.memory.query import Query
from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.lexical import terms
from ctxkeep.daemon.retrieval.passages import Passage

#: The best passages (by words) of which one must share a rare word with the message, and
#: how few passages may hold a word for it to count as rare where there are few sessions.
STRONG_TOP = 3
RARE_LEAST = 5
#: A word held by at most this share of memory's passages (those of deleted sessions not
#: counted) is rare: it says what a message is about. Chosen on the dev split once deleted
#: sessions left the statistics (0.05: 73.4 % of the added tokens from evidence sessions,
#: 64.8 % of its turns; 0.075: 75.8 %, 69.2 %; 0.1: 74.5 %, 69.2 %; 0.2: 71.7 %, 65.9 %).
RARE_SHARE = 0.075
#: A passage is about a message when it holds one of every RARE_PER_NEEDED of the
#: message's rare words, MOST_NEEDED at most (`needed`).
RARE_PER_NEEDED = 3
MOST_NEEDED = 2
#: A message that does not speak of the user's past must share this share of its words (two
#: at least, each rare) with a passage: it names what that passage is about.
NAMED_SHARE = 0.8
#: A turn's memory comes from the sessions whose best passage scores at least this share of
#: the best of all (the sessions the question is about), not from every session with a word of it.
SESSION_FLOOR = 0.5

Ranked = list[list[tuple[int, float]]]


def rare_words(index: MemoryIndex, query: Query, unseen: bool = False) -> frozenset[str]:
    """The message's own words few of memory's passages hold (RARE_SHARE, RARE_LEAST), with
    those none holds where `unseen`."""
    return index.lexical.rare(query.own, least=RARE_LEAST, share=RARE_SHARE, unseen=unseen)


def needed(index: MemoryIndex, query: Query) -> int:
    """How many of the message's rare words a passage must hold to be about it: one in each
    RARE_PER_NEEDED of them (those no passage holds counted too), at most MOST_NEEDED. A
    question names its subject and what it asks of it ("where does my sister live?": the
    answer says "sister", not "live"), so one may do; but one of six ("trouble with the
    battery life on my phone lately") held in passing, "lately" or "life", names no subject."""
    return needed_of(len(rare_words(index, query, unseen=True)))


def needed_of(specific: int) -> int:
    """How many of a message's `specific` rare words (those no passage holds counted) a
    passage must hold to be about it (`needed`)."""
    return min(MOST_NEEDED, -(-specific // RARE_PER_NEEDED)) or 1


def strong(index: MemoryIndex, query: Query, ranked: Ranked) -> bool:
    """Whether what memory found is about the message, not only worded like it (`ranked`:
    by words, then by meaning where there are vectors). For a message that speaks of the
    user's own past (Query.about_past): one of its best passages by words holds enough of
    the message's words that few passages have (lexical.rare, `needed`), or one stands out
    by meaning (the semantic ranking keeps only those far above the rest). For any other
    ("how are the quince trees by the wall?" as much as "what is the capital of Canada?"):
    one of the user's own best passages shares most of its words (NAMED_SHARE, two at least)
    with it: a thing of theirs is named in what they said, where a generic answer ("20
    minutes each week") shares two words with any everyday question."""
    rare = rare_words(index, query)
    best = [pid for pid, _ in ranked[0]]
    if not query.about_past:
        best = [pid for pid in best if index.passages[pid].role == "user"]
    shared = max((len(rare & frozenset(terms(index.passages[pid].text))) for pid in best[:STRONG_TOP]), default=0)
    if not query.about_past:
        return shared >= 2 and shared >= NAMED_SHARE * len(query.own)
    return shared >= needed(index, query) or (len(ranked) > 1 and bool(ranked[1]))


def may_be_strong(index: MemoryIndex, query: Query) -> bool:
    """Whether `strong` could hold for the message whatever its vector: what the words alone
    rule out before a turn asks for the message's vector. A message about the user's past
    may be found by meaning; any other needs two rare words, most of its own, in a passage."""
    if query.about_past:
        return True
    rare = rare_words(index, query)
    return len(rare) >= 2 and len(rare) >= NAMED_SHARE * len(query.own)


def statements_first(passages: Sequence[Passage], scores: dict[int, float]) -> dict[int, float]:
    """The scores with those of passages that only ask something lowered (select.ASKED): a
    question asked elsewhere says what someone wanted to know, not what holds. Only where
    every sentence asks: "I've been using my Fitbit … can you suggest tips?" states what
    the user uses (lowering every passage that ends with a question lowered most of what
    users said: 69.2 % of the dev split's evidence turns came back, 73.6 % now)."""
    return {pid: s * select.ASKED if select.only_asks(passages[pid].text) else s for pid, s in scores.items()}


def about_it(index: MemoryIndex, query: Query, ranked: Ranked, kept: list[int]) -> list[int]:
    """Of `kept`, the passages about the message too: holding enough of its rare words
    (`needed`), or found by meaning."""
    rare = rare_words(index, query)
    holding, least = index.holding(rare), needed(index, query)
    by_meaning = {pid for pid, _ in ranked[1]} if len(ranked) > 1 else set()
    return [pid for pid in kept if holding[pid] >= least or pid in by_meaning]


def best_sessions(index: MemoryIndex, kept: list[int], scores: dict[int, float], best: float) -> list[int]:
    """Of `kept` (best first), those of the sessions whose best passage scores at least
    SESSION_FLOOR × `best`: where the question's subject was spoken of."""
    top: dict[int, float] = {}
    for pid in kept:
        top.setdefault(index.owner_of[pid], scores[pid])
    return [pid for pid in kept if top[index.owner_of[pid]] >= SESSION_FLOOR * best]
