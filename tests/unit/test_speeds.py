"""Each model's reading and writing speed, learnt from the server's timings
(daemon/context/speeds.py): what a turn or a compaction should take, and how long a model
reading a prompt is waited for."""

from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.backends.protocol import ChatChunk
from ctxkeep.daemon.context.speeds import OUTLIER, PATIENCE, PATIENCE_S, Speeds

S = 1_000_000_000  # nanoseconds


def final(read: int, read_s: float, wrote: int, write_s: float, cached: int | None = None) -> ChatChunk:
    return ChatChunk(done=True, prompt_eval_count=read, prompt_eval_cached_count=cached,
                     prompt_eval_duration=int(read_s * S), eval_count=wrote, eval_duration=int(write_s * S))


def test_speeds_come_from_the_tokens_the_server_read_and_wrote():
    speeds = Speeds()
    assert speeds.expected("m", 1000) is None and speeds.said("m", 1000) == ""
    speeds.observe("m", final(1200, 10.0, 100, 5.0, cached=200))  # 1,000 read in 10 s: the cache's not
    assert speeds.of("m").read == 100 and speeds.of("m").write == 20
    assert speeds.expected("m", 4000, 40) == 4000 / 100 + 40 / 20
    assert speeds.said("m", 4000) == "~40 s for 4,000 tokens at 100 tokens/s here"
    assert speeds.expected("other", 10) is None  # per model


def test_a_measurement_too_small_to_say_anything_is_left_out_and_new_ones_move_the_speed():
    speeds = Speeds()
    speeds.observe("m", final(5, 0.001, 3, 0.001))  # overheads, not speed
    assert speeds.of("m").read == 0 and speeds.of("m").write == 0
    speeds.observe("m", final(1000, 10.0, 100, 10.0))
    speeds.observe("m", final(1000, 5.0, 100, 10.0))
    assert 100 < speeds.of("m").read < 200 and speeds.of("m").write == 10


def test_a_slow_model_is_waited_for_longer_than_configured_never_shorter():
    speeds = Speeds()
    assert speeds.patience("m", 3000, 120.0) == 120.0  # nothing measured: as configured
    speeds.observe("m", final(1000, 50.0, 100, 10.0))  # 20 tokens a second
    assert speeds.patience("m", 3000, 120.0) == PATIENCE * 150 + PATIENCE_S
    assert speeds.patience("m", 100, 120.0) == 120.0

def answered_(read: int, read_s: float, wrote: int = 0, write_s: float = 0.0) -> ChatChunk:
    return final(read, read_s, wrote, write_s)


def test_one_odd_sample_does_not_swing_the_reading_speed():
    speeds = Speeds()
    for _ in range(5):
        speeds.observe("m", answered_(1330, 10.0))  # 133 tokens/s
    speeds.observe("m", answered_(110, 10.0))  # 11 tokens/s: the machine busy for a moment
    assert 120 <= speeds.of("m").read <= 140
    speeds.observe("m", answered_(980, 10.0))  # 98 tokens/s
    assert 98 <= speeds.of("m").read <= 140


def test_a_lasting_change_is_followed():
    speeds = Speeds()
    for _ in range(5):
        speeds.observe("m", answered_(1000, 10.0))  # 100 tokens/s
    for _ in range(12):
        speeds.observe("m", answered_(200, 10.0))  # 20 tokens/s from now on
    assert speeds.of("m").read < 40


@given(st.lists(st.floats(min_value=1, max_value=10_000), min_size=2, max_size=40))
def test_no_single_turn_moves_a_speed_by_more_than_twice(rates):
    speeds = Speeds()
    before = 0.0
    for rate in rates:
        speeds.observe("m", answered_(1000, 1000 / rate, 100, 100 / rate))
        now = speeds.of("m").read
        if before:
            assert before / OUTLIER - 1e-6 <= now <= before * OUTLIER + 1e-6
        before = now
