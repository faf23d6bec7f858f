"""A session's prompt count and the rules by which it changes (store/prompt_count.py)."""

from ctxkeep.daemon.store.prompt_count import CacheTally, PromptCount


def test_a_counted_turn_ends_with_its_answer_and_an_estimate_does_not():
    exact = PromptCount.counted(1000, True, answer=80, recalled=120, cached=900)
    assert exact == PromptCount(tokens=1000, exact=True, answer=80, recalled=120, cached=900)
    assert exact.next_prompt == 1000 - 120 + 80  # the next prompt: less the recall block, plus the answer
    guessed = PromptCount.counted(1000, False, answer=80, recalled=120, cached=900)
    assert guessed.answer == 0 and guessed.cached == -1 and guessed.next_prompt == 1000
    assert PromptCount.counted(500, True, answer=1, recalled=0, cached=9000).cached == 500  # never above the prompt


def test_a_changed_prompt_becomes_an_estimate_without_its_answer():
    count = PromptCount.counted(1000, True, answer=80, recalled=120, cached=900)
    compacted = count.estimated(400)
    assert (compacted.tokens, compacted.exact, compacted.answer, compacted.next_prompt) == (400, False, 0, 400)
    recounted = count.estimated(990, exact=True)  # the prompt last counted: its count, but no answer after
    assert recounted.exact and recounted.next_prompt == 990


def test_a_restored_count_is_exact_only_when_no_turn_joined_since():
    saved = PromptCount.counted(1000, True, answer=80, recalled=120, cached=900)
    now = PromptCount.counted(3000, True, answer=50, recalled=0, cached=2900)
    assert now.restored(saved, later=False) == PromptCount(tokens=1000, exact=True, answer=80, recalled=120,
                                                             cached=2900)
    stale = now.restored(saved, later=True)
    assert (stale.tokens, stale.exact, stale.answer, stale.recalled) == (1000, False, 0, 0)


def test_the_cache_tally_counts_only_turns_whose_server_said():
    tally = CacheTally().adding(PromptCount.counted(1000, True, answer=1, recalled=0, cached=800))
    tally = tally.adding(PromptCount.counted(2000, True, answer=1, recalled=0))  # the server did not say
    assert tally == CacheTally(prompt=1000, served=800) and tally.hit_rate == 0.8
    assert CacheTally().hit_rate is None
