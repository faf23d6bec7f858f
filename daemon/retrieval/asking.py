"""What a new message asks of its conversation's past, read from its words alone (pure
rules over its text): whether it speaks of the user's own past, whose words it asks about,
whether it asks for something at all, refers back to the turn before, or gathers what
several turns said. Recall and memory decide what to search for, and how much room it may
take, by these."""

import re

_REFERS_BACK = re.compile(r"\b(it|its|that|this|those|these|them|they|he|she|him|her|his|"
                          r"there|then|again|same|above|earlier|before|previous|last)\b", re.I)


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


#: Any of those ways, in one expression: one pass over a message instead of six.
_ABOUT_THE_PAST = re.compile("|".join(f"(?:{p.pattern})" for p in (
    _OF_ANSWERS, _OF_THEMSELVES, _OF_THE_PAST, _FOR_THE_USER, _TO_THE_USER, _OF_AN_ORDER)), re.I)


def about_the_past(message: str) -> bool:
    """Whether a message speaks of the user's own past: of themselves ("my", "I", "we"), of
    what the model said ("you suggested"), of a time before ("remind me", "last time",
    "what was the codeword"), of what was done to them ("who gave me"), of
    the order things happened in ("who graduated first, Emma or Alex?"), or of their tastes
    ("recommend a show for me", "around me"). A request that does none of these ("write a
    poem about autumn", "give me a limerick", "suggest three names for a bakery", "say it
    again more simply") asks nothing of the user's other conversations."""
    return bool(_ABOUT_THE_PAST.search(message))


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


def gathers(message: str) -> bool:
    """Whether a message asks for what several turns said (_GATHERS)."""
    return bool(_GATHERS.search(message))


#: A question of what holds now ("what does Nate do for a living now?", "where does she live
#: these days?", "do I still …?"): the turn that says it best may be the older statement.
_NOW = re.compile(r"\b(?:now|currently|these\s+days|nowadays|at\s+the\s+moment|still|any\s?more|lately)\b", re.I)


def holds_now(message: str) -> bool:
    """Whether a message asks what holds now (a question that says so: _NOW)."""
    return asks(message) and bool(_NOW.search(message))
