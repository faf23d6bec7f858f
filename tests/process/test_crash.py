"""Acknowledged means durable: SIGKILLs at random points lose nothing (a bounded run;
bench/crash.py is the soak)."""

import os

import crash


def test_kills_at_random_points_lose_no_acknowledged_question(daemon_factory, standin):
    kills = int(os.environ.get("CTXKEEP_CRASH_KILLS", "20"))
    report = crash.run(daemon_factory(), standin, kills=kills, seed=3)
    assert report.kills == kills and report.restarts_failed == 0
    assert report.acknowledged >= kills
    assert report.lost == []
    assert report.unanswered == []
    assert report.invariant_failures == []
    assert set(report.by_mode) == set(crash.MODES)
