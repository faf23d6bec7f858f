"""Whether a model's next summary is worth asking for (summary_record.py), from how its
last ones fared: a pure record, tested on its own."""

from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.compaction.summary_record import PROBE_EVERY, RECENT, SummaryRecord


def test_a_model_is_asked_until_its_last_tries_all_failed_then_one_in_probe_every():
    record = SummaryRecord()
    for _ in range(RECENT):
        assert record.worth("m", "again")
        record.add("m", "again", False)
    asked = [record.worth("m", "again") for _ in range(3 * PROBE_EVERY)]
    assert asked.count(True) == 3 and asked[PROBE_EVERY - 1] and not any(asked[:PROBE_EVERY - 1])
    assert record.worth("other", "again") and record.worth("m", "first")  # per model, per kind


def test_one_good_try_makes_the_next_worth_asking_again():
    record = SummaryRecord()
    for _ in range(RECENT):
        record.add("m", "aging", False)
    assert not record.worth("m", "aging")
    record.add("m", "aging", True)
    assert all(record.worth("m", "aging") for _ in range(RECENT))


@given(st.lists(st.booleans(), max_size=30))
def test_a_try_is_skipped_only_after_recent_failures_in_a_row(outcomes):
    record = SummaryRecord()
    for good in outcomes:
        record.add("m", "first", good)
    tail = outcomes[-RECENT:]
    assert record.worth("m", "first") == (len(tail) < RECENT or any(tail))


def test_status_names_the_models_whose_summaries_are_not_asked_as_usual_and_what_stands_in():
    record = SummaryRecord()
    assert record.notes() == {}
    for _ in range(RECENT):
        record.add("small", "summary", False)
        record.add("mid", "again", False)
        record.add("fine", "summary", True)
    record.add("fine", "again", False)  # one failure is no verdict
    notes = record.notes()
    assert set(notes) == {"small", "mid"}
    assert "own sentences" in notes["small"] and f"one summary in {PROBE_EVERY}" in notes["small"]
    assert "second tries" in notes["mid"]
    record.add("small", "summary", True)  # a good one: asked as usual again
    assert set(record.notes()) == {"mid"}
