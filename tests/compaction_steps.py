"""What the compaction and counting tests share (tests/daemon/test_compaction.py,
test_context_counts.py): turns, a compaction's events, the active context and the history."""


from conftest import wait_terminal
from ctxkeep.protocol.events import (
    CompactionResult,
    ResponseGeneration,
)

MODEL = "qwen2.5:7b"


def converse(client, sid, turns, text=lambda i: f"Question {i}: tell me about topic {i}."):
    """Run `turns` turns; returns their response.generation events."""
    ends = []
    for i in range(turns):
        acc = client.send(sid, text(i))
        end, _ = wait_terminal(client, acc.generation_id)
        assert isinstance(end, ResponseGeneration), end
        ends.append(end)
    return ends


def compaction_events(client, compaction_id, timeout=30.0):
    """Events of one compaction up to and including its result."""
    seen = []
    while True:
        item = client.next_event(timeout=timeout)
        assert item is not None, f"no compaction.result; saw {seen}"
        event = item[1]
        if getattr(event, "compaction_id", None) == compaction_id:
            seen.append(event)
            if isinstance(event, CompactionResult):
                return seen


def compact(client, sid, **kw):
    acc = client.compact(sid, **kw)
    return compaction_events(client, acc.compaction_id)


def active(client, sid):
    return client.history(sid, active=True, limit=1000).messages


def full_history(client, sid):
    return client.history(sid, limit=1000).messages


def assert_valid_prompt(messages):
    """System first, never two of the same role in a row."""
    roles = [m["role"] for m in messages]
    assert "system" not in roles[1:]
    assert all(a != b for a, b in zip(roles, roles[1:])), roles
