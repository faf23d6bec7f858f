"""The context engine's sums as hypothesis properties: a prompt's features are its messages'
sums, folds kept across turns equal folds from the start, the session index scores as
BM25 from scratch."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.compaction.relevance import TermCache, bm25_counts
from ctxkeep.daemon.context.features import prompt_features
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import Attachment, MessageRecord
from ctxkeep.protocol.images import ImageRef
from ctxkeep.protocol.tools import FunctionCall, ToolCall, ToolResult

TEXT = st.sampled_from(["", "hello world", "x = [1, 2]\n", "Größe über alles", "  spaced\n\n", "{}"])


@st.composite
def contexts(draw):
    """A session, its context state and active messages of every shape normalize meets."""
    from ctxkeep.daemon.store.context_records import Checkpoint
    from ctxkeep.daemon.store.records import SessionRecord
    from ctxkeep.protocol.goals import Goals
    messages = []
    for seq in range(draw(st.integers(0, 8))):
        files = [Attachment(path=f"f{seq}{i}", mode="full", block=draw(TEXT), summary=draw(TEXT))
                 for i in range(draw(st.integers(0, 2)))]
        role = draw(st.sampled_from(["user", "assistant", "system", "tool"]))
        if role == "tool":  # results: whole, or (in file_summaries) shortened
            results = [ToolResult(tool_name=draw(st.sampled_from(["run", "read_file"])),
                                  content=draw(st.sampled_from([*TEXT.elements, "line\n" * 60])))
                       for _ in range(draw(st.integers(1, 3)))]
            messages.append(MessageRecord(seq=seq, role=role, content="", created=0.0, tool_results=results))
            continue
        calls = [ToolCall(function=FunctionCall(name="run", arguments={"cmd": draw(TEXT)}))] if (
            role == "assistant" and draw(st.booleans())) else []
        images = [ImageRef(hash=f"{seq:064x}", media_type="image/png", size=9, name=draw(TEXT))
                  ] * draw(st.integers(0, 2)) if role == "user" else []  # only questions hold images
        messages.append(MessageRecord(seq=seq, role=role, content=draw(TEXT), created=0.0, files=files,
                                      tool_calls=calls, images=images))
    checkpoints = [Checkpoint(id="c", first_seq=0, last_seq=1, summary=draw(TEXT), original_tokens=1,
                              current_tokens=1) for _ in range(draw(st.integers(0, 2)))]
    goals = Goals(goal=draw(TEXT))
    context = ActiveContext(seqs=[m.seq for m in messages], checkpoints=checkpoints, goals=goals,
                            file_summaries=draw(st.lists(st.integers(0, 8), max_size=4)))
    session = SessionRecord(id="s", name="s", model="m", system=draw(TEXT), num_ctx=4096,
                            created=0.0, updated=0.0, vision=draw(st.booleans()))
    user = MessageRecord(seq=99, role="user", content=draw(TEXT), created=0.0) if draw(st.booleans()) else None
    return session, context, messages, user


@settings(max_examples=300, deadline=None)
@given(contexts())
def test_a_prompts_features_sum_from_its_messages_exactly(case):
    """The cached per-message sum equals the features of the prompt actually built."""
    from ctxkeep.daemon.context.features import FeatureCache, context_features
    from ctxkeep.daemon.context.prompt import build_messages, context_messages, system_parts
    session, context, active, user = case
    built = build_messages(session, context, active, user) if user else \
        context_messages(session, context, active)
    cache = FeatureCache()
    for _ in range(2):  # computed, then from the cache
        assert context_features(cache, session, system_parts(session, context), context, active,
                                user) == prompt_features(built)


@st.composite
def histories(draw):
    """One session's contexts over time: messages appended (as turns do), some dropped
    from the front (as compactions do), summaries toggled, a projection's unstored
    message at the end (seq -1), and a new user message."""
    from ctxkeep.daemon.store.records import SessionRecord
    session = SessionRecord(id="s", name="s", model="m", system=draw(TEXT), num_ctx=4096,
                            created=0.0, updated=0.0, vision=draw(st.booleans()))
    stored: list[MessageRecord] = []
    states = []
    for turn in range(draw(st.integers(1, 8))):
        for _ in range(draw(st.integers(0, 3))):
            seq = len(stored)
            files = [Attachment(path=f"f{seq}", mode="full", block=draw(TEXT), summary=draw(TEXT))
                     ] if draw(st.booleans()) else []
            role = draw(st.sampled_from(["user", "assistant", "system"]))
            images = [ImageRef(hash=f"{seq:064x}", media_type="image/png", size=9, name=draw(TEXT))
                      ] * draw(st.integers(0, 2)) if role == "user" else []
            stored.append(MessageRecord(seq=seq, role=role,
                                        content=draw(TEXT), created=0.0, files=files, images=images,
                                        kind=draw(st.sampled_from(["message", "summary"]))))
        start = draw(st.integers(0, max(0, len(stored) - 1))) if draw(st.booleans()) else 0
        active = stored[start:]
        if draw(st.booleans()):
            active = [*active, MessageRecord(seq=-1, role="assistant", content=draw(TEXT), created=0.0)]
        summaries = draw(st.lists(st.integers(0, len(stored)), max_size=2))
        context = ActiveContext(seqs=[m.seq for m in active], file_summaries=summaries,
                                pinned=draw(st.lists(st.integers(0, len(stored)), max_size=2)))
        user = MessageRecord(seq=1000 + turn, role="user", content=draw(TEXT), created=0.0,  # seqs are unique
                             files=[Attachment(path=f"u{turn}", mode="full", block=draw(TEXT), summary=draw(TEXT))
                                    ] if draw(st.booleans()) else [],
                             images=[ImageRef(hash=f"{1000 + turn:064x}", media_type="image/png", size=9,
                                              name=draw(TEXT))] * draw(st.integers(0, 1)))
        states.append((context, active, user))
    return session, states


@settings(max_examples=300, deadline=None)
@given(histories())
def test_folds_kept_across_turns_equal_folds_from_the_start(case):
    """Features and prompts folded on from a session's earlier contexts (context/fold.py)
    equal those computed from the start, however the context changed in between; a recall
    block follows the new message as the model sees it."""
    from ctxkeep.daemon.context.features import (
        FeatureCache,
        Folded,
        Segmented,
        context_features,
        fold_step,
        segment_step,
    )
    from ctxkeep.daemon.context.fold import PrefixFold
    from ctxkeep.daemon.context.prompt import TurnPrompts, build_messages, system_parts
    session, states = case
    cache = FeatureCache()
    folded = PrefixFold(Folded, fold_step(cache))
    segmented = PrefixFold(Segmented, segment_step(cache))
    prompts = TurnPrompts()
    for context, active, user in states:
        key = (session.id, frozenset(context.pinned), frozenset(context.file_summaries), session.vision)
        fresh, step = Segmented(), segment_step(FeatureCache())
        for m in active:
            fresh = step(fresh, m, key)
        assert segmented.fold(session.id, key, active) == fresh
        system = system_parts(session, context)
        for with_user in (None, user):
            assert context_features(cache, session, system, context, active, with_user, folded) \
                == context_features(FeatureCache(), session, system, context, active, with_user)
        if all(m.seq >= 0 for m in active):
            plain = build_messages(session, context, active, user)
            assert prompts.build(session, context, active, user) == plain
            # recall's block: after the message as the model sees it (its files and notes
            # too), so the next prompt, the message without it, is this one up to the block
            recalled = prompts.build(session, context, active, user, "<recalled>\nx\n</recalled>")
            assert recalled[:-1] == plain[:-1]
            assert recalled[-1] == {**plain[-1], "content": f"{plain[-1]['content']}\n\n<recalled>\nx\n</recalled>"}


_WORDS = st.sampled_from("alpha beta gamma delta kube pod mesh bread poem stock cat mouse".split())


@settings(max_examples=60, deadline=None)
@given(plans=st.lists(st.tuples(st.lists(st.integers(0, 40), max_size=30, unique=True),
                                st.lists(_WORDS, max_size=12)), min_size=1, max_size=6),
       texts=st.lists(st.lists(_WORDS, max_size=15).map(" ".join), min_size=41, max_size=41))
def test_the_session_index_scores_what_bm25_scores_from_scratch(plans, texts):
    """Level 2 scores through a per-session inverted index that follows the candidates
    from plan to plan; every plan's scores equal BM25 computed from scratch."""
    terms = TermCache()
    messages = [MessageRecord(seq=i, role="user", content=t, created=0.0) for i, t in enumerate(texts)]
    for seqs, query in plans:
        candidates = [messages[s] for s in seqs]
        indexed = terms.postings.bm25("s", candidates, query, lambda m: terms.of("s", m))
        scratch = bm25_counts([terms.of("s", m) for m in candidates], query)
        assert indexed == pytest.approx(scratch, rel=1e-12, abs=1e-12)
    assert len(terms.postings._kept["s"].docs) == len(plans[-1][0])  # what left was dropped
