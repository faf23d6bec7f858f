"""The pure parts automatic compaction reads: goal markers updating the record, the
reliability score (a model's size and the compactions its session has had), level 2's
relevance by words and by meaning."""

import pytest

from ctxkeep.daemon.compaction.relevance import TermCache, bm25, by_meaning, score, words
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


def test_bm25_and_meaning():
    docs = [words("the cat sat on the mat"), words("stock prices fell sharply today"),
            words("a cat and another cat chased the mouse")]
    scores = bm25(docs, words("cat mouse"))
    assert scores[2] > scores[0] > scores[1] == 0
    # by meaning: each candidate's cosine with the recent messages' mean direction
    near = by_meaning([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], None, [-1.0, 0.0]], [[2.0, 0.0], [1.0, 1.0], None])
    assert near[0] > near[1] > 0 and near[2] == near[3] == near[4] == 0.0  # no length, none, opposite
    assert near[0] == pytest.approx(0.9239, abs=1e-3)  # 22.5° from the mean of 0° and 45°
    assert by_meaning([[1.0, 0.0]], [None]) == [0.0]


def test_level2_keeps_what_is_near_the_recent_turns_in_meaning_where_words_do_not_meet():
    """Relevance to the recent turns by the vectors recall embeds messages by: an older
    message that shares no word with them but is about the same thing is kept before one
    about something else; without vectors, words alone decide (here: nothing)."""
    import asyncio

    from ctxkeep.daemon.store.records import MessageRecord

    said = ["My Fitbit counts my steps every day.", "The bakery sells rye bread.",
            "How many health devices do I use?"]
    messages = [MessageRecord(seq=i, role="user", content=t, created=0.0) for i, t in enumerate(said)]
    meaning = {said[0]: [0.9, 0.1], said[1]: [0.1, 0.9], said[2]: [1.0, 0.0]}
    asked: list[list[str]] = []

    async def vectors(texts: list[str]) -> list[list[float] | None]:
        asked.append(texts)
        return [meaning.get(t) for t in texts]
    scores = asyncio.run(score(messages[:2], messages[2:], terms=TermCache(), session_id="s", vectors=vectors))
    assert scores[0] > scores[1] and asked == [said]
    assert asyncio.run(score(messages[:2], messages[2:], terms=TermCache(), session_id="s")) == [0.0, 0.0]
