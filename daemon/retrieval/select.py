"""What recall puts in the prompt: the query, the fused ranking, the passages that fit the
budget, and the block they make. Pure functions of their inputs."""

import re
import time
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from ctxkeep.daemon.context.features import add
from ctxkeep.daemon.retrieval.asking import refers_back
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.tokens import Vector, text_features

#: A new message with fewer terms than this (words that say what it is about), or one
#: that refers back with fewer than REFERRING_TERMS, is asked with the turn before it.
SHORT_TERMS = 3
REFERRING_TERMS = 5

OPENING = ("<recalled from earlier in this conversation — not part of my new message; "
           "oldest first, with who said it and when>")
CLOSING = "</recalled>"
#: What the block's opening and closing lines add to a prompt (worked out once: each turn asks).
FRAME = text_features(f"{OPENING}\n{CLOSING}")


#: How much more the passages of whoever a question asks about count in the fusion.
ADDRESSED = 1.5


def leans_on_last_turn(message: str, own_terms: int, whole: bool = False) -> bool:
    """Whether a message with `own_terms` terms of its own is searched (by words and by
    meaning) with the turn before it: when it says little of its own ("and then?") or
    refers back with little else ("what did she say about it?"). A specific question is its
    own best query, whatever pronouns it holds ("How long did it take me to assemble the
    IKEA bookshelf?", "What was the name of that famous deli near the Vatican you told me
    about?"). A `whole` question (one from outside a chat log about its people) with any
    word of its own is searched alone: "How many children does Caroline have?" after "What
    does Caroline do for a living now?" is not about a living."""
    if whole and own_terms:
        return False
    return own_terms < SHORT_TERMS or (own_terms < REFERRING_TERMS and refers_back(message))


#: How much newer weighs: the newest passage's fused score counts this much more than the
#: oldest's (what was said last about a thing is what holds now, all else alike).
RECENCY = 0.15


def fused(*rankings: Sequence[tuple[int, float]], weights: Sequence[float] = (),
          favored: Callable[[int], bool] = lambda pid: False,
          newer: Callable[[int], float] | None = None) -> dict[int, float]:
    """Each passage's fused score: each ranking's scores divided by its best (so 0..1),
    times its weight (default 1), then summed (CombSUM), raised by up to RECENCY the newer
    the passage (`newer`, 0..1; by default its id, as ids grow with the history), and by
    ADDRESSED when `favored` (the question asks of its speaker's words). Unlike reciprocal rank fusion it keeps how far ahead a
    ranking's best are: one decisive word match is not outvoted by passages that both
    rankings find middling."""
    scores: dict[int, float] = {}
    for n, ranking in enumerate(rankings):
        if not ranking or ranking[0][1] <= 0:
            continue
        weight = (weights[n] if n < len(weights) else 1.0) / ranking[0][1]
        for pid, score in ranking:
            scores[pid] = scores.get(pid, 0.0) + weight * max(0.0, score)
    if newer is None:
        newest = max(scores, default=0) or 1
        newer = lambda pid: pid / newest
    return {pid: s * (1 + RECENCY * newer(pid)) * (ADDRESSED if favored(pid) else 1.0)
            for pid, s in scores.items()}


def lifted(scores: dict[int, float], passages: Sequence[Passage], span: tuple[float, float] | None,
           lift: float) -> dict[int, float]:
    """The scores with those of passages said within `span` (when.span) raised by `lift`."""
    if span is None:
        return scores
    start, end = span
    return {pid: s * (1 + lift) if start <= passages[pid].created < end else s for pid, s in scores.items()}


#: What a message that speaks of the past and names a span ("what did I buy 10 days ago?")
#: weighs the passages said within it, ranked by meaning among themselves (`said_then`): the
#: turn it asks for is there, though it may share no word with the question ("I just got a
#: smoker today") and, in a chat about one thing, not stand out by meaning from the rest.
#: Live oracle split, e5, 4,096, one sitting: the 58 questions it touches 99 → 112 of their 127
#: evidence turns (two lose one each), all 90.3 → 91.9 %; everyday requests given nothing the same.
THEN = 0.5


def said_then(nearest: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """The passages said within a question's span, nearest first with their cosines,
    scored from 1 (the nearest) down to 0 (the farthest of them): every text is somewhat
    alike by meaning, so what counts is the order among them."""
    if not nearest:
        return []
    high, low = nearest[0][1], nearest[-1][1]
    return [(pid, (c - low) / (high - low) if high > low else 1.0) for pid, c in nearest]


#: A passage of the session's own history must score at least this share of the best match
#: (a checkpoint's quote of it included) to be recalled: the block holds what is about the
#: message, not whatever shares a word with it because there is room (passages that stand
#: out by meaning keep their own share: MEANING_SHARE). Live dev split by words, 4,096: at
#: 0.15 the same evidence turns, recall's tokens from evidence sessions 49.6 → 58.1 %; at
#: 0.25 (taken after the quotes) two evidence turns fewer, 71.4 %.
FLOOR = 0.15


#: The floor (FLOOR) for a question that gathers (asking.gathers). LongMemEval's oracle split (every history only its
#: evidence sessions; 170 questions, 4,096, e5): multi-session 82.1 → 87.2 % of the evidence
#: turns, all 90.6 → 92.3 %; the dev split 93.4 → 92.3 and 91.2 % (two runs: two questions
#: that gather lose a turn to the room the turns let in take), recall's tokens from evidence
#: sessions 51.3 → 49.3 and 50.1 %. Sharing the room by score per token as well took the
#: oracle split to 94.8 % but let 42 short notes that share one word ("devices") crowd out
#: the turns meaning found (test_what_meaning_ranks_well_competes_with_words_for_the_whole_room).
GATHER_FLOOR = 0.05


def above_floor(scores: dict[int, float], floor: float = FLOOR) -> dict[int, float]:
    """The scores of the passages that score at least `floor` of the best."""
    best = max(scores.values(), default=0.0)
    return {pid: s for pid, s in scores.items() if s >= floor * best}


#: What a passage that only asks something counts for in recall's and memory's rankings,
#: against one that states something: a question asked earlier says what someone wanted to
#: know, not what holds ("when did Greta begin the new lessons?" holds all of "when did Priya
#: begin the new lessons?" but Priya's name, and answers neither). Memory on the dev split,
#: 4,096: 0.5 → 78.6 % of its tokens from evidence sessions, 0.3 → 79.8, 0.1 → 80.5 (evidence
#: turns 73.6 % at each); recall's evidence turns the same at each.
ASKED = 0.1
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def only_asks(text: str) -> bool:
    """Whether every sentence of `text` is a question (on every ranked passage of a turn:
    most do not end with one, and are answered without reading their sentences)."""
    text = text.strip()
    return text.endswith("?") and all(s.rstrip().endswith("?") for s in _SENTENCES.split(text) if s.strip())


def statements_first(ranked: Sequence[tuple[int, float]], passages: Sequence[Passage]) -> list[tuple[int, float]]:
    """A ranking ((passage id, score), best first) with the scores of passages that only ask
    something lowered (ASKED), best first again."""
    lowered = [(pid, s * ASKED if only_asks(passages[pid].text) else s) for pid, s in ranked]
    return sorted(lowered, key=lambda found: -found[1])


#: A message of at most this many terms is short enough that an older turn of only some of
#: its words adds nothing to it (in a long one, the same words may say something new together).
ECHO_TERMS = 8


def echoes(passage: frozenset[str], said: frozenset[str], about_past: bool) -> bool:
    """Whether a passage of these terms only says the new message's words (`said`) again,
    and so adds nothing to the prompt: all of them ("How have you been?" said before), or —
    to a short message that does not ask of the past — some of them ("Thanks, Sam!" to
    "Thanks a lot, Sam!"). A question about the past may be answered by its own words said
    before ("did I tell you I play the oboe?": "I play the oboe")."""
    return passage == said or (not about_past and len(said) <= ECHO_TERMS and passage <= said)


def line(p: Passage) -> str:
    """A passage as the block shows it: when, who, and the text (a part of a longer
    message marked as one)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(p.created))
    who = "user" if p.role == "user" else "assistant"
    part = f" (part {p.part + 1} of {p.parts})" if p.parts > 1 else ""
    return f"[{when}] {who}{part}: {p.text}"


def unrepeated(ranked: Iterable[int], text: Callable[[int], str], seen: Iterable[int] = ()) -> list[int]:
    """`ranked` without a passage whose text a better-ranked one has (or whose hash is in
    `seen`): "Thanks, Audrey, that means a lot." said forty times in a chat is said once in
    a block."""
    held = set(seen)
    kept = []
    for pid in ranked:
        key = hash(text(pid))
        if key not in held:
            held.add(key)
            kept.append(pid)
    return kept


#: Passages whose terms overlap this much (Jaccard) with a better one say the same thing
#: again (a small model restating a fact in answer after answer): only the best is taken.
SAME = 0.7
#: The best passages checked for saying the same again (the rest follow as they are).
DISTINCT_CHECKED = 60


def distinct(ranked: Sequence[int], term_set: Callable[[int], frozenset[str]]) -> list[int]:
    """`ranked` without the passages that repeat a better-ranked one (SAME), among the
    first DISTINCT_CHECKED."""
    kept: list[int] = []
    seen: list[frozenset[str]] = []
    for pid in ranked[:DISTINCT_CHECKED]:
        mine = term_set(pid)
        if mine and any(len(mine & other) >= SAME * len(mine | other) for other in seen):
            continue
        kept.append(pid)
        seen.append(mine)
    return kept + list(ranked[DISTINCT_CHECKED:])


#: The deviations a passage must stand out by meaning to be ranked by it at all, in recall's
#: fusion and in meaning's offers (memory's: vectors.STAND_OUT). By e5 a turn that is one of
#: several alike (four devices, asked about "health-related devices") seldom reaches 3; at 2
#: they are ranked beside words' matches. Live dev, e5, 4,096: 84.6 → 86.8 % of the evidence
#: turns, multi-session 75.0 → 83.3 %, unrelated requests given nothing the same (54 of 57).
MEANING_STAND_OUT = 2.0


def block_features(lines: Iterable[Vector], opening: str = OPENING) -> Vector:
    """The features of a block of these lines (each line's features with its newline, as
    the index keeps them): the same as the block's text would give, since no word or run
    of spaces crosses a newline — without reading the block's text again every turn."""
    return add(_edge(opening + "\n"), *lines, _edge(CLOSING))


@lru_cache(maxsize=8)
def _edge(text: str) -> Vector:
    return text_features(text)


def block(chosen: Sequence[Passage]) -> str:
    """The recalled passages as one marked block (opening the new message)."""
    return "\n".join([OPENING, *(line(p) for p in chosen), CLOSING]) if chosen else ""
