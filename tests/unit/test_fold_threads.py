"""A kept fold (context/fold.py) folded from worker threads and the event loop at once
(a large context is measured off the loop): every fold still equals one from the start."""

import threading

from ctxkeep.daemon.context.fold import PrefixFold
from ctxkeep.daemon.store.records import MessageRecord


def test_folds_from_several_threads_at_once_equal_folds_from_the_start():
    fold = PrefixFold(lambda: (), lambda state, m, key: (*state, m.seq), sessions=3, per_session=2)
    messages = [MessageRecord(seq=i, role="user", content="x", created=0.0) for i in range(300)]
    wrong: list[str] = []

    def work(n: int) -> None:
        for round_ in range(60):
            session = f"s{(n + round_) % 5}"  # more sessions than are kept: some are dropped meanwhile
            active = messages[:(round_ * 7 + n) % 300] + messages[-3:] * (round_ % 2)
            if fold.fold(session, round_ % 3, active) != tuple(m.seq for m in active):
                wrong.append(f"{session} {round_}")
    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
