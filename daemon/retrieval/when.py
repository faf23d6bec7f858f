"""When a question asks about: "last week", "three days ago", "in March", "last Saturday",
"over the past month" as a span of time, so that recall can lift what was said then.

Relative to the time the question names for itself (a stamp a chat front-end wrote into it,
"[2023/05/30 (Tue) 23:38] …"), else to when it was asked. Pure functions; local time.
"""

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

#: How much more a passage said within the span a question names counts.
LIFT = 1.0

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3, "a few": 3}
_UNITS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]
_STAMP = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:\D{1,12}?(\d{1,2}):(\d{2}))?")
_COUNT = r"(\d{1,3}|a couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_AGO = re.compile(_COUNT + r"\s+(day|week|month|year)s?\s+ago\b", re.I)
_PAST = re.compile(r"\b(?:past|last)\s+(?:" + _COUNT + r"\s+)?(day|week|month|year)s\b|"
                   r"\b(?:in|over|within|during)\s+the\s+(?:past|last)\s+(day|week|month|year)\b", re.I)
_NAMED = re.compile(r"\b(yesterday|today|this (?:week|month|year|weekend)|past weekend|last (?:week|month|year|weekend|"
                    + "|".join(_DAYS) + r"))\b", re.I)
_IN_MONTH = re.compile(r"\b(?:in|during|since|of)\s+(" + "|".join(_MONTHS) + r")\b(?:\s+(\d{4}))?", re.I)
#: A word each of the four needs: a message without one names no span.
_ANY = re.compile(r"\b(?:ago|past|last|yesterday|today|this|" + "|".join(_MONTHS) + r")\b", re.I)


def reference(text: str, asked: float) -> datetime:
    """The question's own time: the first date stamp in it, else `asked`."""
    return _stamp_time(_STAMP.search(text[:200])) or datetime.fromtimestamp(asked)


def _stamp_time(m: re.Match[str] | None) -> datetime | None:
    if m is None:
        return None
    try:
        return datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4) or 12), int(m.group(5) or 0))
    except ValueError:
        return None


#: A stamp that opens a message, as a chat front-end writes one ("[2023/05/30 (Tue) 23:38] …").
#: The blanks before it are taken at once (`*+`; a stamp opens with a digit): a message that
#: opens with thousands of blanks is not tried at every split of them (16,000 took ~4 s).
_OPENING = re.compile(r"\s*+\[?\s*+" + _STAMP.pattern)
#: How far past its own storing a stamp may say it was written (time zones, clocks adrift).
_AHEAD = 86_400.0


@dataclass
class Clock:
    """When each message of a conversation was said, by the clock of the front-end that
    stamps them: a message a stamp opens, at the stamp's time; each one after it, at that
    time plus what has passed since (by when they were stored); before any stamp, when it
    was stored. So a question's span ("a week ago", by its own stamp) and the passages it
    lifts are on one clock, as for a conversation replayed or imported with its stamps.
    Fed every message of the conversation in order."""

    stamp: float | None = None
    #: When the message with the last stamp was stored.
    at: float = 0.0

    def said(self, text: str, stored: float) -> float:
        found = _stamp_time(_OPENING.match(text))
        if found is not None and (seconds := time.mktime(found.timetuple())) <= stored + _AHEAD:
            self.stamp, self.at = seconds, stored
            return seconds
        return stored if self.stamp is None else self.stamp + max(0.0, stored - self.at)


def span(text: str, asked: float) -> tuple[float, float] | None:
    """The span of time (Unix seconds, start and end) the question asks about, or None."""
    if not _ANY.search(text):  # (most messages: one search, no clock read)
        return None
    past, named, ago, month = _PAST.search(text), _NAMED.search(text), _AGO.search(text), _IN_MONTH.search(text)
    if not (past or named or ago or month):
        return None
    now = reference(text, asked)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    out = _past(past, now) or _named(named, now, day) or _ago(ago, now) or _month(month, now)
    if out is None:  # ("in the last month": the past one)
        return None
    start, end = out
    return time.mktime(start.timetuple()), time.mktime(end.timetuple())


def _count(word: str | None) -> float | None:
    if not word:
        return 1
    word = word.lower()
    return float(word) if word.isdigit() else _NUMBERS.get(word)


def _named(m: re.Match[str] | None, now: datetime, day: datetime) -> tuple[datetime, datetime] | None:
    if m is None:
        return None
    what = m.group(1).lower()
    monday = day - timedelta(days=day.weekday())
    first = day.replace(day=1)
    last_month = (first - timedelta(days=1)).replace(day=1)
    spans = {"today": (day, now), "yesterday": (day - timedelta(days=1), day),
             "this week": (monday, now), "last week": (monday - timedelta(days=7), monday),
             "this weekend": (monday + timedelta(days=5), monday + timedelta(days=7)),
             "last weekend": (monday - timedelta(days=2), monday), "past weekend": (monday - timedelta(days=2), monday),
             "this month": (first, now), "last month": (last_month, first),
             "this year": (day.replace(month=1, day=1), now),
             "last year": (day.replace(year=day.year - 1, month=1, day=1), day.replace(month=1, day=1))}
    if what in spans:
        return spans[what]
    weekday = _DAYS.index(what.split()[1])
    back = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=back), day - timedelta(days=back - 1)


def _ago(m: re.Match[str] | None, now: datetime) -> tuple[datetime, datetime] | None:
    n = _count(m.group(1)) if m else None
    if m is None or n is None:
        return None
    unit = _UNITS[m.group(2).lower()]
    middle, half = now - timedelta(days=n * unit), timedelta(days=max(1.0, unit / 2))
    return middle - half, min(now, middle + half)


def _past(m: re.Match[str] | None, now: datetime) -> tuple[datetime, datetime] | None:
    if m is None:
        return None
    n = _count(m.group(1))
    if n is None:
        return None
    unit = _UNITS[(m.group(2) or m.group(3)).lower()]
    return now - timedelta(days=n * unit), now


def _month(m: re.Match[str] | None, now: datetime) -> tuple[datetime, datetime] | None:
    if m is None:
        return None
    month = _MONTHS.index(m.group(1).lower()) + 1
    year = int(m.group(2)) if m.group(2) else (now.year if month <= now.month else now.year - 1)
    start = datetime(year, month, 1)
    end = datetime(year + (month == 12), month % 12 + 1, 1)
    return start, end
