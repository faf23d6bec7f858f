"""What recall puts in the prompt: the query, the fused ranking, the passages that fit the
budget, and the block they make. Pure functions of their inputs."""

import re
import time
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from ctxkeep.daemon.context.features import add
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.tokens import Vector, text_features

#: A new message with fewer terms than this (words that say what it is about), or one
#: that refers back with fewer than REFERRING_TERMS, is asked with the turn before it.
SHORT_TERMS = 3
REFERRING_TERMS = 5
_REFERS_BACK = re.compile(r"\b(it|its|that|this|those|these|them|they|he|she|him|her|his|"
                          r"there|then|again|same|above|earlier|before|previous|last)\b", re.I)

OPENING = ("<recalled from earlier in this conversation — not part of my new message; "
           "oldest first, with who said it and when>")
CLOSING = "</recalled>"
#: What the block's opening and closing lines add to a prompt (worked out once: each turn asks).
FRAME = text_features(f"{OPENING}\n{CLOSING}")


def refers_back(message: str) -> bool:
    return bool(_REFERS_BACK.search(message))


_OF_ANSWERS = re.compile(r"\byou\s+(?:\w+\s+)?(?:said|told|suggested|recommended|mentioned|gave|wrote|"
                         r"listed|proposed|explained|described|answered|named|called|meant|showed|provided|"
                         r"created|shared)\b|"
                         r"\b(?:did|had|have)\s+you\s+(?:say|tell|suggest|recommend|mention|give|write|"
                         r"list|propose|explain|describe|name|call|mean|show|provide|create|share)\b|"
                         r"\byour\s+(?:answer|suggestion|recommendation|advice|reply|list|idea|example|"
                         r"explanation|plan)s?\b", re.I)
#: The user's words for themselves that speak of them ("my", "I", "we"), and with them those
#: a request names its receiver with ("give me", "help us"), which ask for something now.
_THEMSELVES = "i|i'm|i've|i'd|my|mine|myself|we|we're|our|ours"
_OF_THEMSELVES = re.compile(rf"\b(?:{_THEMSELVES})\b", re.I)
_OF_THE_USER = re.compile(rf"\b(?:{_THEMSELVES}|me|us)\b", re.I)
#: A request for something chosen for the user ("recommend a show for me to watch", "find us a
#: place to eat") or near them ("events around me"): what suits them is what they said of their
#: tastes and whereabouts. "give me", "tell me", "help us" name a receiver, not a taste.
_FOR_THE_USER = re.compile(r"\b(?:recommend|suggest|advise|pick|choose|find)\b[^.!?\n]*?\b(?:me|us)\b|"
                           r"\b(?:around|near|nearby)\s+(?:me|us)\b", re.I)
#: What was done to or for the user ("who gave me the mixer?", "the hobbies that led me to
#: join"): a verb in the past with them as its receiver. "give me", "tell me" ask for
#: something now.
_TO_THE_USER = re.compile(r"\b(?:gave|led|told|sent|showed|taught|lent|bought|brought|got|made|left|took|"
                          r"offered|helped|asked|invited|introduced)\s+(?:me|us)\b", re.I)
#: How much more the passages of whoever a question asks about count in the fusion.
ADDRESSED = 1.5


#: A question about a past conversation as a whole ("our previous chat about …"): what it
#: asks may be in either side's words.
_OF_BOTH = re.compile(r"\bour\s+(?:previous|last|earlier|past|other|recent)\s+(?:chat|conversation|discussion|"
                      r"talk|exchange)s?\b", re.I)


def addressed(message: str) -> str | None:
    """Whose words a question asks about: the model's when it asks what "you said",
    "suggested", "provided", "your advice" (…); no one's in particular when it asks about
    "our previous conversation" (either side may have said it); else the user's when it
    speaks of "my", "I", "we" (…): what the user said of themselves is the source, the
    model's restatement of it (a small model's, often wrong) is not; else no one's."""
    if _OF_ANSWERS.search(message):
        return "assistant"
    if _OF_BOTH.search(message):
        return None
    return "user" if _OF_THE_USER.search(message) else None


_OF_THE_PAST = re.compile(r"\b(?:remind|remember|recall|earlier|previously|before|last\s+(?:time|week|month|"
                          r"year)|ago|that\s+time|back\s+when|the\s+other\s+day|did|was|were|had)\b", re.I)
#: A question of which of several things came first or last, in one sentence ("who became a
#: parent first, Rachel or Alex?", "which event happened first, the trip or the move?"): what
#: it orders happened, each in a turn of its own. Not "first" and "or" anywhere in a pasted
#: text ("at first reference … or …").
_OF_AN_ORDER = re.compile(r"\b(?:which|who)\b[^.!?\n]*\b(?:first|earliest|latest)\b[^.!?\n]*\b(?:or|among)\b",
                          re.I)


#: A message that asks for something: a question, or a request to be told or reminded.
_ASKS = re.compile(r"[?？؟]|^\W*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|"
                   r"could|would|will|should|have|has)\b|\b(?:remind|tell|show|give|list|find)\s+(?:me|us)\b|"
                   r"\b(?:remind|recall|summari[sz]e)\b", re.I)


def asks(message: str) -> bool:
    """Whether a message asks for something (a question, "remind me", "tell me"), not only
    says something ("On Sunday I tried to learn a card trick."): only then may recall take
    the room of verbatim turns (recall/room.py), which leave the active context for it."""
    return bool(_ASKS.search(message))


def about_the_past(message: str) -> bool:
    """Whether a message speaks of the user's own past: of themselves ("my", "I", "we"), of
    what the model said ("you suggested"), of a time before ("remind me", "last time",
    "what was the codeword"), of what was done to them ("who gave me"), of
    the order things happened in ("who graduated first, Emma or Alex?"), or of their tastes
    ("recommend a show for me", "around me"). A request that does none of these ("write a
    poem about autumn", "give me a limerick", "suggest three names for a bakery", "say it
    again more simply") asks nothing of the user's other conversations."""
    return any(pattern.search(message) for pattern in (_OF_ANSWERS, _OF_THEMSELVES, _OF_THE_PAST, _FOR_THE_USER,
                                                       _TO_THE_USER, _OF_AN_ORDER))


def context_for(message: str, own_terms: int, last_turn: Sequence[str]) -> str:
    """What recall searches with beside the new message: the last turn's texts when the
    message says little of its own ("and then?") or refers back with little else ("what
    did she say about it?"), else nothing (a specific question is its own best query)."""
    if own_terms < SHORT_TERMS or (own_terms < REFERRING_TERMS and refers_back(message)):
        return "\n".join(last_turn)
    return ""


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


#: A question that gathers what was said in several turns ("how many magazines do I get?",
#: "what did I raise in total?", "the order of the three trips", "which came first, the
#: coffee maker or the mixer?"): the turn that names its subject best ("my subscription to The
#: New Yorker magazine") outscores the others it needs many times over ("I'm also getting
#: Architectural Digest": 0.06 of it), and each of them says one fact in a short turn.
#: So does a question of what holds now or held before ("what am I currently reading?", "how
#: often did I play previously?"): the turn that names its subject best is often the older
#: statement, and the one that changed it scores a fraction of it.
_GATHERS = re.compile(r"\bhow\s+many\b|\b(?:in\s+total|total|altogether|combined|in\s+all)\b|"
                      r"\b(?:the|what|which|chronological)\s+order\b|"
                      r"\b(?:first|earliest|latest|most\s+recently)\b[^?]*\b(?:or|among)\b|"
                      r"\b(?:or|among)\b[^?]*\b(?:first|earliest|latest)\b|"
                      r"\b(?:currently|previously|these\s+days|nowadays|anymore|(?:I|we)\s+used\s+to|"
                      r"did\s+(?:I|we)\s+use\s+to)\b", re.I)
#: The floor (FLOOR) for such a question. LongMemEval's oracle split (every history only its
#: evidence sessions; 170 questions, 4,096, e5): multi-session 82.1 → 87.2 % of the evidence
#: turns, all 90.6 → 92.3 %; the dev split 93.4 → 92.3 and 91.2 % (two runs: two questions
#: that gather lose a turn to the room the turns let in take), recall's tokens from evidence
#: sessions 51.3 → 49.3 and 50.1 %. Sharing the room by score per token as well took the
#: oracle split to 94.8 % but let 42 short notes that share one word ("devices") crowd out
#: the turns meaning found (test_what_meaning_ranks_well_competes_with_words_for_the_whole_room).
GATHER_FLOOR = 0.05


def gathers(message: str) -> bool:
    """Whether a message asks for what several turns said (_GATHERS)."""
    return bool(_GATHERS.search(message))


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


def line(p: Passage) -> str:
    """A passage as the block shows it: when, who, and the text (a part of a longer
    message marked as one)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(p.created))
    who = "user" if p.role == "user" else "assistant"
    part = f" (part {p.part + 1} of {p.parts})" if p.parts > 1 else ""
    return f"[{when}] {who}{part}: {p.text}"


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
