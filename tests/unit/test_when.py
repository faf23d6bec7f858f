"""When a question asks about (retrieval/when.py): spans of time from its own words, relative
to the date stamp it carries or to when it was asked."""

import time
from datetime import datetime

import pytest

from ctxkeep.daemon.memory import ranking
from ctxkeep.daemon.memory.index import MemoryIndex
from ctxkeep.daemon.memory.query import Query
from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.lexical import asked_terms, query_terms
from ctxkeep.daemon.retrieval.passages import Passage, passages
from ctxkeep.daemon.retrieval.when import Clock, span
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord

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
    ("How many plants did I acquire in the last month?", ("04-30", "05-30")),  # the month past, not April
    ("What did I read over the past week?", ("05-23", "05-30")),
    ("the first BBQ in June", ("06-01", "07-01")),  # June after May: last year's
    ("the first BBQ in June 2023", ("06-01", "07-01")),
    # in any case (one search first rules out a message that names no span)
    ("What did I cook THIS WEEK?", ("05-29", "05-30")),
    ("What did I buy Three Days AGO?", ("05-26", "05-28")),
    ("what did I say Today", ("05-30", "05-30")),
    ("During MARCH I moved", ("03-01", "04-01")),
    ("Which bike did I service the past weekend?", ("05-27", "05-29")),
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


def test_a_conversation_stamped_by_its_front_end_is_dated_by_its_stamps():
    """Replayed today, a conversation a front-end stamped in May 2023: each message is dated
    by the stamp that opens it, or the last one before it plus the time since; a date
    mentioned in passing, a stamp in the future, or no stamp yet change nothing."""
    today = time.mktime(datetime(2026, 12, 4, 10, 0).timetuple())
    clock = Clock()
    said = [clock.said(text, today + n) for n, text in enumerate([
        "Hello there",                                        # no stamp yet: when stored
        "[2023/05/20 (Sat) 01:20] I bought a peace lily.",    # the stamp's time
        "Nice! How often should I water it?",                 # that time, plus the second since
        "My invoice is dated 2023-01-02, by the way.",       # in passing: not a stamp
        "[2031/01/01 (Wed) 00:00] a clock adrift",           # ahead of its storing: not a stamp
        "[2023/05/27 (Sat) 09:00] And a snake plant."])]     # the next stamp
    assert said[0] == today
    may20 = time.mktime(datetime(2023, 5, 20, 1, 20).timetuple())
    assert said[1:5] == [may20, may20 + 1, may20 + 2, may20 + 3]
    assert said[5] == time.mktime(datetime(2023, 5, 27, 9, 0).timetuple())
    bought = passages(MessageRecord(seq=1, role="user", content="[2023/05/20 (Sat) 01:20] I bought a peace lily.",
                                    created=today), said[1])
    assert bought[0].created == may20 and "2023-05-20 01:20" in select.line(bought[0])


def test_memory_dates_another_sessions_messages_by_their_stamps_and_lifts_the_span_asked():
    """Memory is on the question's clock too: in two other sessions replayed today, each
    stamped by its front-end, the plant bought in the week a stamped question asks about
    ("last week", by its own stamp) ranks above the one bought a month before, and each
    comes back dated by its stamp, not by when it was stored."""
    today = time.mktime(datetime(2026, 12, 4, 10, 0).timetuple())
    index = MemoryIndex()
    said = {"lily": "[2023/05/24 (Wed) 09:00] I bought a peace lily for the office.",
            "fern": "[2023/04/26 (Wed) 09:00] I bought a fern for the office."}
    for n, (name, text) in enumerate(said.items()):  # the fern's session is stored last (newer)
        owner = index.owner(SessionRecord(id=name, name=name, model="m", num_ctx=4096, created=today, updated=today))
        index.add(owner, [MessageRecord(seq=0, role="user", content=text, created=today + n)])
    question = "[2023/05/30 (Tue) 23:38] Which plant did I buy for the office last week?"
    query = Query(query_terms(question), span=span(question, today), own=frozenset(asked_terms(question)))
    found = ranking.ranked(index, query, index.candidates("asker"), 10, strong=False)
    assert [index.passages[pid].text for pid, _ in found] == [said["lily"], said["fern"]]
    assert [select.line(index.passages[pid]).split("]")[0] for pid, _ in found] == \
        ["[2023-05-24 09:00", "[2023-04-26 09:00"]
