"""Text from outside (a user's message, a model's answer) read in one pass whatever its
blanks: the expressions that read every answer's goal markers and every message's opening
stamp find what they found before, and thousands of blank lines do not hang them (each
tried every split of a run of blanks: 4,000 newlines in an answer took 39 s, 16,000 blanks
opening a message ~4 s, on the event loop)."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.context import goals
from ctxkeep.daemon.retrieval import when
from ctxkeep.daemon.retrieval.when import Clock
from ctxkeep.protocol.goals import Goals

#: The expressions as first written.
MARKER = re.compile(r"^\s*[-*]?\s*\[(GOAL|CHECKPOINT|DECISION|ARTIFACT|NEXT)\]\s*(.+?)\s*$", re.M)
STATUS = re.compile(r"\s+[-–—:]\s*(COMPLETED|DONE|IN[ -]PROGRESS|PENDING|LOCKED)\s*$", re.I)
OPENING = re.compile(r"\s*\[?\s*" + when._STAMP.pattern)

BLANKS = [" ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0"]
PIECES = BLANKS + ["[GOAL]", "[NEXT]", "[CHECKPOINT]", "- ", "* ", "-", "Ship it", "x", " - DONE",
                   ": locked", " — in progress", "[", "2023/05/30 (Tue) 23:38]", "2023-05-30", "]"]
texts = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


@given(texts)
def test_markers_are_those_first_found(text):
    """Each marker the first expression found, but one with nothing after it (which set an
    empty goal)."""
    first = [(kind, body) for kind, body in MARKER.findall(text) if body.strip()]
    assert goals.markers(text) == first


@given(texts)
def test_a_status_is_found_where_it_was(text):
    now, first = goals._STATUS.search(text), STATUS.search(text)
    assert (now and (now.span(), now.groups())) == (first and (first.span(), first.groups()))


@given(texts)
def test_an_opening_stamp_is_read_as_it_was(text):
    now, first = when._OPENING.match(text), OPENING.match(text)
    assert (now and now.groups()) == (first and first.groups())


@pytest.mark.timeout(30)  # the first expressions take hours over these
@pytest.mark.parametrize("blank", ["\n", " ", " \n", "\t"])
def test_thousands_of_blanks_are_read_at_once(blank):
    flood = blank * 50_000
    assert goals.apply_markers(Goals(), flood) is None
    assert goals.apply_markers(Goals(), f"[GOAL]{flood}Ship it{flood}- DONE").goal == "Ship it"
    assert Clock().said(flood + "no stamp", 100.0) == 100.0
    assert goals._STATUS.search("Ship it" + flood + "x") is None
