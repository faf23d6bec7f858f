"""The order tests are handed to pytest-xdist's workers in: those marked `early` (each takes
many seconds, much of it waiting on daemons and sockets) at the fronts of the workers' first
shares, so that each worker starts on some and none ends the run on one.

`--dist worksteal` first gives each of its N workers a contiguous share of the collection
(the first len // N, then the rest's len // (N - 1), and so on) and later moves tests from the
back of a busy worker's queue to an idle one; a test at the front of a share is run first by
its worker. Left in collection order, a 21-second test met at the end of a share ran alone
while the other workers had finished (stop 95: the run ended 15-19 s after them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest

T = TypeVar("T")


def shares(count: int, workers: int) -> list[int]:
    """The sizes of the contiguous shares worksteal first gives `workers` idle workers."""
    sizes, left = [], count
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def early_first(items: Sequence[T], early: Callable[[T], bool], workers: int) -> list[T]:
    """`items` with the `early` ones dealt out in turn to the fronts of the `workers` shares
    (all first with one worker or none), the rest after them in their order."""
    first = [item for item in items if early(item)]
    rest = [item for item in items if not early(item)]
    if workers <= 1:
        return first + rest
    out: list[T] = []
    for n, size in enumerate(shares(len(items), workers)):
        fronts = first[n::workers]
        out += fronts
        take = max(0, size - len(fronts))
        out += rest[:take]
        rest = rest[take:]
    return out + rest


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected: the shares are of what runs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The collection in the order above (tests/conftest.py registers this module)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = early_first(items, lambda item: item.get_closest_marker("early") is not None, workers)
