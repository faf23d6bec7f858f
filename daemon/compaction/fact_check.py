"""A summary is checked against what it replaces before it is kept (pure functions): the
names, numbers, dates and decisions of its source that it drops, and whether it is about its
source at all. One that fails is asked again once with the missing items named; if it fails
again it is replaced by an extractive checkpoint: the source's own sentences that carry
those items (a small model's summary that loses the number stated in turn 1, or reads "The
model is a model of the world…", never stands for the conversation)."""

import re
from collections.abc import Callable
from dataclasses import dataclass

from ctxkeep.daemon.retrieval.lexical import PHRASING, STOP, terms

#: Numbers of two characters or more ("step 3" is how a chat counts, "4711" a fact).
_NUMBER = re.compile(r"(?<![\w.])\d[\d,.:/-]*\d(?![\w])")
_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_DATE = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:"
                   + "|".join(_MONTHS) + r")\b", re.I)
#: A capitalized word that is not a sentence's first, nor a word every sentence may start with.
_NAME = re.compile(r"(?<=[^.!?\n\s]\s)(?=[A-ZÀ-ÖØ-Þ])[^\W\d_][\w'’-]+")
#: A speaker's label at a line's start: the word after it opens a sentence ("User: Turn 3").
_SPEAKER = re.compile(r"^(?:User|Assistant|Earlier summary): ", re.M)
#: A sentence that says a decision was made: one of these words in a run of text between
#: sentence ends and line ends (`_SENTENCE_RUN`; the words are looked for within each run, so
#: that the work grows with the text, not with a sentence's length squared).
_DECIDED = re.compile(r"\b(?:decided|decide|agreed|chose|chosen|settled on|going with|we'll use|"
                      r"will use|\[DECISION\])\b", re.I)
_SENTENCE_RUN = re.compile(r"[^.!?\n]+")
_DECIDING = set(terms("decided decide agreed chose chosen settled going will use"))
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
#: Of a summary's words (those a summary of anything uses aside), the share that must be its
#: source's for it to be about it.
ABOUT_SHARE = 0.25
_GENERIC = set(terms("summary summarized user assistant discussed discussion conversation talked asked "
                     "mentioned said plan plans topic topics things thing various also"))
#: Items a check asks for at most (the first said first): a summary a quarter of its source's
#: size cannot keep every number of a long transcript.
MOST_ITEMS = 24
_NOT_NAMES = {w.capitalize() for w in STOP} | {"User", "Assistant", "Earlier", "Summary", "Also", "Part", "OK", "Ok"}


def _plain(text: str) -> str:
    return text.replace(",", "").lower()


def items(text: str) -> list[str]:
    """The names, numbers, dates and decisions of a text, each once, in the order said."""
    found: dict[str, None] = {}
    for pattern in (_DATE, _NUMBER, _NAME):
        for m in pattern.finditer(_SPEAKER.sub("", text) if pattern is _NAME else text):
            item = m.group(0).strip().rstrip(".,:;-/")
            if item and item not in _NOT_NAMES and not item.startswith(("I'", "I’")):
                found[item] = None
    for run in _SENTENCE_RUN.finditer(text):
        if _DECIDED.search(run.group(0)):
            words = [w for w in terms(run.group(0)) if len(w) > 3 and w not in _DECIDING][:3]
            if words:
                found["decision: " + " ".join(words)] = None
    # "March" where "March 3rd" is an item: an item met twice in all of them, its own once
    every = "\0".join(found)
    found = {item: None for item in found if every.count(item) == 1}
    order = {item: text.find(item.split(": ", 1)[-1]) for item in found}
    return sorted(found, key=lambda item: order[item] if order[item] >= 0 else len(text))


def kept(item: str, summary: str) -> bool:
    """Whether the summary keeps an item (numbers with or without their thousands commas; a
    decision by its words' stems)."""
    if item.startswith("decision: "):
        held = set(terms(summary))
        return all(w in held for w in item.removeprefix("decision: ").split())
    return _plain(item) in _plain(summary)


def stated(source: str) -> str:
    """What a transcript's facts are taken from: the user's own lines where it has speakers
    (what a model restates, often wrongly, is not a fact to keep), else all of it."""
    lines = [line for line in source.split("\n\n") if line.startswith(("User: ", "Earlier summary: "))]
    return "\n\n".join(lines) if lines or "Assistant: " in source else source


def dropped(source: str, summary: str, most: int = MOST_ITEMS) -> list[str]:
    """The source's items (its first `most`, of what the user stated) the summary lost."""
    return [item for item in items(stated(source))[:most] if not kept(item, summary)]


def about(source: str, summary: str) -> bool:
    """Whether the summary is about its source: most of its words are the source's."""
    own = set(terms(summary)) - _GENERIC - PHRASING
    return not own or len(own & set(terms(source))) >= ABOUT_SHARE * len(own)


@dataclass(frozen=True)
class Verdict:
    """A summary checked: what it lost, and whether it is about its source."""

    missing: tuple[str, ...]
    on_topic: bool

    @property
    def good(self) -> bool:
        return self.on_topic and not self.missing

    def why(self) -> str:
        reasons = [] if self.on_topic else ["it is not about what it replaces"]
        if self.missing:
            reasons.append(f"it drops {', '.join(self.missing[:8])}{' …' if len(self.missing) > 8 else ''}")
        return "; ".join(reasons)


def check(source: str, summary: str) -> Verdict:
    return Verdict(tuple(dropped(source, summary)), about(source, summary))


def everything(source: str) -> Verdict:
    """The verdict a checkpoint made without a summary answers to: every item its source
    states is to be kept (every sentence, where it states none)."""
    return Verdict(tuple(items(stated(source))), False)


def asking_for(missing: tuple[str, ...]) -> str:
    """The instruction of a second try: what it must keep, as said (or, where it lost
    nothing but was about something else, to stay with what was said)."""
    if not missing:
        return "Write only about what the conversation says, in its own words."
    shown = [m.removeprefix("decision: ") + " (a decision)" if m.startswith("decision: ") else m for m in missing]
    return "Keep these exactly as they were said: " + "; ".join(shown) + "."


def extractive(source: str, summary: str, missing: tuple[str, ...], room: int, cost: Callable[[str], int]) -> str:
    """The checkpoint that replaces a summary that failed twice: the source's own sentences
    that carry the missing items (all of them, for a summary that lost none but is not about
    its source), in order, within `room` tokens — after the summary where it is about its
    source and leaves them room, alone otherwise."""
    sentences = [s.strip() for s in _SENTENCE.split(stated(source)) if s.strip()]
    carrying = [s for s in sentences if any(kept(item, s) for item in missing)] if missing else sentences
    out: list[str] = []
    used = 0
    if summary and about(source, summary):
        out, used = [summary], cost(summary)
    for s in carrying:
        price = cost(s) + 1
        if used + price > room:
            continue
        out.append(s)
        used += price
    return "\n".join(out) if out else summary  # nothing of it fits: the summary, for what it is worth
