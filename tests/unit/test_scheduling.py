"""The order the suite's tests are handed to pytest-xdist's workers in (tests/scheduling.py):
each worker's first share opens with its turn of the long tests."""

from scheduling import early_first, shares


def test_the_shares_are_worksteals_first_split():
    assert shares(10, 4) == [2, 2, 3, 3]
    assert shares(903, 4) == [225, 226, 226, 226]
    assert shares(3, 4) == [0, 1, 1, 1]


def test_each_share_opens_with_its_turn_of_the_early_tests_and_nothing_is_lost():
    items = list(range(40))
    early = {5, 17, 23, 31, 39}
    ordered = early_first(items, lambda i: i in early, 4)
    assert sorted(ordered) == items
    starts = [0, 10, 20, 30]  # shares(40, 4) == [10, 10, 10, 10]
    assert [ordered[s] for s in starts] == [5, 17, 23, 31]
    assert ordered[1] == 39  # the fifth goes to the first share, after its first
    rest = [i for i in ordered if i not in early]
    assert rest == sorted(rest)  # the others keep their order


def test_with_one_worker_the_early_tests_come_first():
    assert early_first([1, 2, 3, 4], lambda i: i % 2 == 0, 1) == [2, 4, 1, 3]
