"""One number for the window (issue 41): after an automatic compaction, the compaction's
own line ("before → after"), the `context.usage` that follows it and the session's
`next_tokens` (what the gauge and `sessions` show) are the same number."""

from conftest import talkative, wait_terminal
from ctxkeep.protocol.events import CompactionResult, ContextUsage

MODEL = "qwen2.5:7b"


def test_a_compactions_line_the_usage_and_the_gauge_say_the_same_number(client, standin):
    talkative(standin, 60)
    sid = client.create_session(model=MODEL, num_ctx=2048).session.id
    for turn in range(10):
        accepted = client.send(sid, f"step {turn}: " + "please keep the garden plan in mind " * 5)
        _, events = wait_terminal(client, accepted.generation_id)
        seen = list(events)
        while (item := client.next_event(timeout=0.5)) is not None:  # what follows the answer
            seen.append(item[1])
        done = [e for e in seen if isinstance(e, CompactionResult) and e.status == "ok"]
        if done:
            after = [e for e in seen[seen.index(done[-1]):] if isinstance(e, ContextUsage)]
            assert after and after[-1].usage.tokens == done[-1].tokens_after
            assert client.session(sid).session.next_tokens == done[-1].tokens_after
            assert client.usage(sid).usage.tokens == done[-1].tokens_after
            return
    raise AssertionError("no compaction in ten turns of a 2,048 window")
