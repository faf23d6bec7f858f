"""What the CLI shows. One number for the window (issue 41): every line that shows a session's fill
shows what the next prompt holds — the answer just written in, the last recall block out —
and its percentage is of that number."""

from ctxkeep.clients.cli.common import usage_lines
from ctxkeep.clients.cli.events import describe
from ctxkeep.protocol.events import ContextUsage
from ctxkeep.protocol.structs import Segments, Usage

# the last prompt: 764 tokens, 150 of them its recall block; the answer then wrote 74
LAST = Usage(tokens=764, window=1024, fill=764 / 1024, exact=True, next_tokens=688,
             segments=Segments(system=20, recent=594, recalled=150), messages=12)


def test_the_watch_line_shows_the_next_prompt_and_its_share():
    line = describe(ContextUsage(usage=LAST))
    assert line == "688/1,024 (67%)", line


def test_the_usage_gauge_shows_the_same_number():
    first = usage_lines(LAST)[0]
    assert "688" in first and "764" not in first, first


def test_status_says_how_far_a_models_speed_bounds_recall():
    from ctxkeep.clients.cli.status import speed_line
    from ctxkeep.protocol.status import ModelSpeed
    slow = speed_line(ModelSpeed(model="gemma3-270m", read=212.4, write=44.8, recall_tokens=212))
    assert slow == "gemma3-270m reads 212 tokens/s, writes 45 tokens/s here; recall's block ≤ 212 tokens (recall_read_seconds)"
    assert "recall" not in speed_line(ModelSpeed(model="fast", read=9000.0))  # no bound to say
