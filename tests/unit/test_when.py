"""When a question asks about (retrieval/when.py): spans of time from its own words, relative
to the date stamp it carries or to when it was asked."""

import time
from datetime import datetime

import pytest

from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.passages import Passage
from ctxkeep.daemon.retrieval.when import span

ASKED = time.mktime(datetime(2023, 5, 30, 23, 38).timetuple())  # a Tuesday


def days(text: str, asked: float = ASKED) -> tuple[str, str] | None:
    found = span(text, asked)
    return found and tuple(datetime.fromtimestamp(t).strftime("%m-%d") for t in found)  # type: ignore[return-value]


@pytest.mark.parametrize("text, expected", [
    ("What did I do yesterday?", ("05-29", "05-30")),
    ("Which shoes did I clean last month?", ("04-01", "05-01")),
    ("Where did I go last week?", ("05-22", "05-29")),
    ("Who came with me last Saturday?", ("05-27", "05-28")),
    ("What did I buy 10 days ago?", ("05-19", "05-21")),  # a day either side
    ("An event two weeks ago: where was it?", ("05-13", "05-20")),  # half a week either side
    ("the trips I took in the past three months", ("02-28", "05-30")),
    ("the first BBQ in June", ("06-01", "07-01")),  # June after May: last year's
    ("the first BBQ in June 2023", ("06-01", "07-01")),
])
def test_a_question_names_a_span(text, expected):
    assert days(text) == expected


def test_the_stamp_a_front_end_wrote_is_the_questions_own_time():
    later = time.mktime(datetime(2026, 11, 26).timetuple())
    assert days("[2023/05/30 (Tue) 23:38] Which shoes did I clean last month?", later) == ("04-01", "05-01")
    assert days("Which shoes did I clean last month?", later) == ("10-01", "11-01")


@pytest.mark.parametrize("text", ["How many days ago did I buy a smoker?", "I may go there", "What is a month?"])
def test_no_span_where_none_is_named(text):
    assert span(text, ASKED) is None


def test_passages_said_within_the_span_are_lifted():
    said = [Passage(seq=i, part=0, parts=1, role="user", created=ASKED - (20 - i) * 86400, text="x") for i in range(20)]
    scores = select.lifted({i: 1.0 for i in range(20)}, said, span("What did I do 5 days ago?", ASKED), 1.0)
    assert {i for i, s in scores.items() if s > 1} == {14, 15}
