"""Hostile bytes at the HTTP front door (issue 59): a few hundred random requests — every
route's valid body with fields replaced, removed or added, bodies cut short or not JSON,
broken request lines and headers — each gets an answer that is not a 500, and the daemon's
log holds no traceback (bench/http_fuzz.py runs 10,000)."""

from http_fuzz import fuzz


def test_random_requests_are_each_answered_and_none_with_a_server_error(daemon_factory):
    daemon = daemon_factory().start()
    out = fuzz(daemon, cases=300)
    assert not out.server_errors, out.server_errors[:5]
    assert not out.unanswered, out.unanswered[:5]
    assert not out.log_errors, out.log_errors[:3]
    assert out.statuses["200"] > 20 and out.statuses["400"] > 20, out.statuses  # both kinds were reached
    with daemon.client() as c:  # and it still serves
        assert c.ping()
