"""Every turn ends cleanly (issue 59): clients that hang up at random moments — before
the question is read or accepted, while the answer streams, after its last chunk — over
HTTP on both APIs, stateless and named, and over ZeroMQ, then retry. Afterwards every retry was answered, no question is
stored twice or left unanswered, no session was made empty, and `ctxkeepd check --settled`
passes after a clean stop, and the daemon's log holds no error and no traceback (bench/hangups.py runs the same 1,000 times)."""

import pytest

from hangups import hang_ups


@pytest.mark.early
def test_hang_ups_at_random_moments_leave_no_question_pending_and_no_duplicate(daemon_factory, standin):
    standin.chunk_delay = 0.004  # an answer streams for ~50-100 ms: hang-ups land in it, and around it
    out = hang_ups(daemon_factory().start(), rounds=30)
    assert not out.failed_retries and not out.duplicates and not out.unanswered, out
    assert out.empty_sessions == 0 and out.check == "", out
    assert not out.errors, out.errors
