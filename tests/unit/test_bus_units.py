"""The event bus's pure parts: the subscription ledger and the text batcher."""

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.events import batcher as batcher_mod
from ctxkeep.daemon.events.batcher import MAX_BATCH_BYTES, TextBatcher
from ctxkeep.daemon.transports.zmq.publisher import EVENT_UNIT_BYTES, high_water_mark
from ctxkeep.daemon.transports.zmq.subscriptions import MAX_PREFIX_BYTES, SubscriptionLedger


def test_a_prefix_too_long_is_refused():
    ledger = SubscriptionLedger(max_total=10, max_per_client=10)
    assert "bytes" in ledger.refusal(1, b"x" * (MAX_PREFIX_BYTES + 1))
    assert ledger.refusal(1, b"x" * MAX_PREFIX_BYTES) == ""


def test_one_connection_cannot_take_the_shared_limit():
    ledger = SubscriptionLedger(max_total=100, max_per_client=3)
    for i in range(3):
        ledger.add("hog", b"p%d" % i)
    assert "per connection" in ledger.refusal("hog", b"p9")
    assert ledger.refusal("hog", b"p0") == ""  # a repeat of one it holds
    assert ledger.refusal("other", b"p9") == ""


def test_the_shared_limit_holds_across_connections():
    ledger = SubscriptionLedger(max_total=4, max_per_client=3)
    for client, prefix in [("a", b"1"), ("a", b"2"), ("b", b"1"), ("b", b"3")]:
        ledger.add(client, prefix)
    assert "max_subscriptions)" in ledger.refusal("c", b"x")


def test_a_repeat_counts_once_and_zeromq_releases_what_a_leaver_held():
    ledger = SubscriptionLedger(max_total=10, max_per_client=10)
    ledger.add("a", b"x")
    ledger.add("a", b"x")
    ledger.add("b", b"x")
    assert ledger.total == 2
    ledger.client_left("a")
    ledger.remove(None, b"x")  # what ZeroMQ sends for the prefix "a" held
    assert ledger.total == 1 and ledger.held_by("a") == 0 and ledger.held_by("b") == 1
    ledger.remove("b", b"x")
    assert ledger.total == 0


ops = st.lists(st.tuples(st.sampled_from(["add", "unsub", "leave"]), st.integers(0, 3),
                         st.sampled_from([b"a", b"b", b"c", b"d"])), max_size=60)


@given(ops)
@settings(max_examples=200, deadline=None)
def test_the_counts_match_what_zeromq_holds(program):
    """Model ZeroMQ's own per-pipe subscription sets; the ledger's total is always their
    size, never over a limit, and never negative."""
    ledger = SubscriptionLedger(max_total=6, max_per_client=3)
    pipes: dict[int, set[bytes]] = {}
    for op, client, prefix in program:
        if op == "add":
            if not ledger.refusal(client, prefix):
                ledger.add(client, prefix)
                pipes.setdefault(client, set()).add(prefix)
        elif op == "unsub":
            if prefix in pipes.get(client, set()):  # a SUB sends an unsubscription it holds
                pipes[client].discard(prefix)
                ledger.remove(client, prefix)
        else:
            ledger.client_left(client)
            for held in pipes.pop(client, set()):
                ledger.remove(None, held)
        assert ledger.total == sum(len(s) for s in pipes.values()) <= 6
        assert all(ledger.held_by(c) == len(s) <= 3 for c, s in pipes.items())


def test_the_queue_length_comes_from_bytes():
    assert high_water_mark(64 << 20) == (64 << 20) // EVENT_UNIT_BYTES
    assert high_water_mark(1) == 1


def test_the_first_piece_goes_out_at_once_and_the_rest_waits(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(batcher_mod.time, "monotonic", lambda: now[0])
    sent: list[tuple[int, str]] = []
    batch = TextBatcher(0.03, lambda i, t: sent.append((i, t)))
    batch.add("Hel")
    batch.add("lo")
    batch.add(" there")
    assert sent == [(0, "Hel")]
    now[0] += 0.031
    batch.add("!")
    assert sent == [(0, "Hel"), (1, "lo there!")]
    batch.add("tail")
    batch.flush()
    batch.flush()  # nothing left: nothing sent
    assert sent[-1] == (2, "tail") and len(sent) == 3


@given(st.lists(st.text(min_size=1, max_size=3000), max_size=20))
@settings(max_examples=100, deadline=None)
def test_no_batch_is_over_the_byte_bound_and_nothing_is_lost(pieces):
    sent: list[tuple[int, str]] = []
    batch = TextBatcher(3600.0, lambda i, t: sent.append((i, t)))
    for piece in pieces:
        batch.add(piece)
    batch.flush()
    assert "".join(t for _, t in sent) == "".join(pieces)
    assert [i for i, _ in sent] == list(range(len(sent)))
    assert all(len(msgspec.json.encode(t)) <= MAX_BATCH_BYTES for _, t in sent)


def test_a_connection_refused_too_often_is_to_be_closed():
    from ctxkeep.daemon.transports.zmq.subscriptions import CUT_AFTER_REFUSALS
    ledger = SubscriptionLedger(max_total=10, max_per_client=1)
    ledger.add("c", b"a")
    assert ledger.refusal("c", b"b")
    assert not any(ledger.refused("c") for _ in range(CUT_AFTER_REFUSALS - 1))
    assert ledger.refused("c")
    ledger.client_left("c")  # a new connection on the descriptor starts afresh
    assert not ledger.refused("c")
