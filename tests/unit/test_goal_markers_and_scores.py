"""The pure parts automatic compaction reads: goal markers updating the record, the
reliability score (a model's size and the compactions its session has had), BM25 and cosine."""

import pytest

from ctxkeep.daemon.compaction.relevance import bm25, cosine, words
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context import reliability
from ctxkeep.protocol.goals import Goals


def test_goal_markers_update_the_record():
    text = ("Plan:\n[GOAL] Implement user authentication\n"
            "[CHECKPOINT] Design the login flow - COMPLETED\n"
            "[CHECKPOINT] Add JWT generation - IN PROGRESS\n"
            "[DECISION] Use JWT for authentication - LOCKED\n"
            "[DECISION] Try bcrypt\n[ARTIFACT] Created src/auth/login.ts\n[NEXT] Add token refresh\n")
    goals = goal_markers.apply_markers(Goals(), text)
    assert goals.goal == "Implement user authentication"
    assert [(c.description, c.status) for c in goals.checkpoints] == [
        ("Design the login flow", "completed"), ("Add JWT generation", "in-progress")]
    assert [(d.description, d.locked) for d in goals.decisions] == [
        ("Use JWT for authentication", True), ("Try bcrypt", False)]
    assert goals.artifacts == ["Created src/auth/login.ts"] and goals.next_steps == ["Add token refresh"]
    again = goal_markers.apply_markers(goals, "[CHECKPOINT] Add JWT generation - DONE")
    assert again.checkpoints[1].status == "completed" and len(again.checkpoints) == 2
    assert goal_markers.apply_markers(goals, "no markers here") is None
    block = goal_markers.render(goals)
    assert block.startswith("ACTIVE GOAL: Implement user authentication")
    assert "  (locked) Use JWT for authentication" in block and "  [x] Design the login flow" in block


def test_reliability_score_as_seed_002_defines_it():
    assert reliability.model_factor("7.6B") == 0.50
    assert reliability.model_factor("70B") == 0.95 and reliability.model_factor("1.2B") == 0.30
    assert reliability.model_factor("137M") == 0.30
    assert reliability.score("7.6B", 0) == reliability.score("1.2B", 0) == 1.0  # nothing compressed yet
    assert reliability.score("7.6B", 1) == pytest.approx(0.425)
    assert reliability.score("70B", 10) == pytest.approx(0.95 * 0.30)  # floor 30 %


def test_bm25_and_cosine():
    docs = [words("the cat sat on the mat"), words("stock prices fell sharply today"),
            words("a cat and another cat chased the mouse")]
    scores = bm25(docs, words("cat mouse"))
    assert scores[2] > scores[0] > scores[1] == 0
    assert cosine([0, 0], [1, 2]) == 0.0 and cosine([1, 0], [1, 0]) == pytest.approx(1.0)
