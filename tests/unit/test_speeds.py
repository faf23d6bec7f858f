"""Each model's reading and writing speed, learnt from the server's timings
(daemon/context/speeds.py): what a turn or a compaction should take, and how long a model
reading a prompt is waited for."""

from ctxkeep.daemon.backends.protocol import ChatChunk
from ctxkeep.daemon.context.speeds import PATIENCE, PATIENCE_S, Speeds

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
