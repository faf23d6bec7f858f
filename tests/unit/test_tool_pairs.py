"""A tool call and its result stay or go together (issue 31): whatever compaction keeps —
a manual compaction's tail and pins, level 2's more relevant half, what level 3 leaves —
never holds one without the other (hypothesis), so no prompt ever carries an orphan."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.compaction.planner import (
    manual_parts,
    plan_file_summaries,
    plan_prune,
    preserved_seqs,
    prune_candidates,
)
from ctxkeep.daemon.context.prompt import wire
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.protocol.tools import FunctionCall, ToolCall, ToolResult
from ollama_standin import orphan

CALL = [ToolCall(function=FunctionCall(name="run", arguments={"cmd": "ls"}))]


@st.composite
def agent_contexts(draw):
    """Questions, each answered directly or through a loop of tool exchanges."""
    active: list[MessageRecord] = []
    for _ in range(draw(st.integers(1, 6))):
        active.append(MessageRecord(seq=len(active), role="user", content="do it", created=0.0))
        for _ in range(draw(st.integers(0, 3))):
            active.append(MessageRecord(seq=len(active), role="assistant", content="", created=0.0,
                                        tool_calls=CALL))
            lines = draw(st.integers(1, 80))
            active.append(MessageRecord(seq=len(active), role="tool", content="", created=0.0,
                                        tool_results=[ToolResult(tool_name="run", content="out\n" * lines)]))
        active.append(MessageRecord(seq=len(active), role="assistant", content="done", created=0.0))
    pinned = draw(st.lists(st.sampled_from([m.seq for m in active]), max_size=3, unique=True))
    return active, ActiveContext(seqs=[m.seq for m in active], pinned=pinned)


def no_orphan(kept: list[MessageRecord]) -> bool:
    return orphan([w for m in kept for w in wire(m)]) == ""


@settings(max_examples=200, deadline=None)
@given(agent_contexts(), st.integers(0, 3), st.integers(1, 6), st.booleans(), st.data())
def test_no_compaction_keeps_half_a_tool_exchange(case, tail, keep_recent, preserve_user, data):
    active, context = case
    assert no_orphan(active)
    _, kept = manual_parts(context, active, tail)
    assert no_orphan(sorted(kept, key=lambda m: m.seq))
    preserved = preserved_seqs(context, active, keep_recent, preserve_user)
    assert no_orphan([m for m in active if m.seq in preserved])  # what level 3 leaves
    candidates = prune_candidates(context, active, preserved)
    scores = data.draw(st.lists(st.floats(0, 1), min_size=len(candidates), max_size=len(candidates)))
    pruned = plan_prune(candidates, scores)
    assert no_orphan([m for m in active if m.seq not in pruned])


@settings(max_examples=100, deadline=None)
@given(agent_contexts())
def test_level_one_shortens_long_older_results_and_never_the_last_two(case):
    """(with the turn's own result, the last three of the prompt)"""
    active, context = case
    context.pinned = []
    shortened = set(plan_file_summaries(context, active))
    tools = [m for m in active if m.tool_results]
    assert not shortened & {m.seq for m in tools[-2:]}
    assert shortened == {m.seq for m in tools[:-2] if m.tool_results[0].content.count("\n") + 1 > 31}  # more lines than head, tail and the note
    for m in tools:
        short = wire(m, m.seq in shortened)[0]["content"]
        assert ("lines omitted" in short) == (m.seq in shortened)


@settings(max_examples=100, deadline=None)
@given(agent_contexts(), st.integers(1, 4))
def test_a_prompt_that_must_fit_may_shorten_all_but_the_turns_own(case, keep_tools):
    """A pass for a prompt that cannot fit otherwise keeps only the turn's own exchange
    whole (keep_tools=1: every long result already in the context may be shortened);
    with more, the last keep_tools - 1 in the context stay whole and preserved."""
    active, context = case
    context.pinned = []
    tools = [m for m in active if m.tool_results]
    whole = tools[max(0, len(tools) - (keep_tools - 1)):] if keep_tools > 1 else []
    shortened = set(plan_file_summaries(context, active, keep_tools))
    assert shortened == {m.seq for m in tools if m not in whole
                         and m.tool_results[0].content.count("\n") + 1 > 31}
    preserved = preserved_seqs(context, active, 1, False, keep_tools)
    assert {m.seq for m in whole} <= preserved
    assert no_orphan([m for m in active if m.seq in preserved])


def test_level_three_keeps_each_tool_exchange_as_one_line():
    """A checkpoint's lines for its tool exchanges: the call, and the last line it returned;
    the summarizer reads a long result as its head and tail."""
    from ctxkeep.daemon.compaction.planner import outline_line, tool_lines
    out = "collected 43 items\n" + "test_io.py F\n" * 60 + "3 failed, 40 passed\n"
    call = MessageRecord(seq=1, role="assistant", content="", created=0.0, tool_calls=[
        ToolCall(function=FunctionCall(name="run", arguments={"cmd": "pytest"}))])
    result = MessageRecord(seq=2, role="tool", content=out, created=0.0,
                           tool_results=[ToolResult(tool_name="run", content=out)])
    assert tool_lines([call, result]) == ['ran `run({"cmd":"pytest"})`: 3 failed, 40 passed']
    assert tool_lines([result]) == []  # its call is not in the group
    assert "lines omitted" in outline_line(result, False) and len(outline_line(result, False)) < len(out)
