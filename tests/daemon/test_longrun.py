"""The long run: 2,000 scripted turns in a 4,096-token window through the real daemon."""

import pytest

import longrun


@pytest.mark.long
def test_two_thousand_turns_in_a_4096_token_window(daemon, standin, tmp_path):
    report = longrun.run(daemon, standin, tmp_path, turns=2000, window=4096)
    assert report.violations == []
    assert report.turns == 2000
    # compactions in large steps (compaction_min_step): checkpoints several times, and far
    # fewer changes than turns (each makes the model re-read the whole prompt)
    assert report.by_level[3] >= 3 and sum(report.by_level.values()) <= report.turns / 3, report.by_level
    assert report.user_summaries >= 1
    assert max(report.fills_after) <= 0.8
    assert max(report.prompt_tokens) < 4096
