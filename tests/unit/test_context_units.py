"""The context engine's pure parts, in-process: prompt normalization, the manual
compaction's tail, the automatic levels' planners and the estimator's fit."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.features import prompt_features
from ctxkeep.protocol.tools import FunctionCall, ToolCall, ToolResult
from ctxkeep.daemon.compaction.planner import (
    plan_file_summaries, plan_prune, preserved_seqs, prune_candidates,
)
from ctxkeep.daemon.context.prompt import normalize
from ctxkeep.daemon.compaction.relevance import TermCache, bm25_counts
from ctxkeep.daemon.compaction.planner import split_tail
from ctxkeep.protocol.images import ImageRef
from ctxkeep.daemon.store.records import Attachment, MessageRecord
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.store import Store
from ollama_standin import count_tokens, render


def msg(seq: int, role: str, text: str = "", files: list[Attachment] | None = None,
        kind: str = "message") -> MessageRecord:
    return MessageRecord(seq=seq, role=role, content=text or f"m{seq}", created=0.0,
                         files=files or [], kind=kind)


roles = st.sampled_from(["system", "user", "assistant"])


@given(st.lists(st.tuples(roles, st.text(max_size=8)), max_size=12))
@settings(max_examples=200, deadline=None)
def test_normalize_gives_what_every_template_accepts(pairs):
    messages = [{"role": r, "content": c} for r, c in pairs]
    out = normalize(messages)
    rest = out[1:] if out and out[0]["role"] == "system" else out
    assert all(m["role"] != "system" for m in rest)  # one system message, first
    assert all(a["role"] != b["role"] for a, b in zip(rest, rest[1:]))  # roles alternate
    for role in ("user", "assistant"):  # nothing is lost, in order
        said = [c for r, c in pairs if r == role]
        kept = "\n\n".join(m["content"] for m in rest if m["role"] == role)
        assert all(text in kept for text in said)


def test_split_tail_keeps_whole_turns():
    active = [msg(0, "user"), msg(1, "assistant"), msg(2, "user"), msg(3, "assistant"),
              msg(4, "user"), msg(5, "assistant"), msg(6, "assistant")]
    head, tail = split_tail(active, 2)
    assert [m.seq for m in head] == [0, 1] and [m.seq for m in tail] == [2, 3, 4, 5, 6]
    assert split_tail(active, 0) == (active, [])
    assert split_tail(active, 9) == ([], active)  # fewer turns than asked: nothing to summarize
    # a summary (kind "summary") never opens a turn
    with_summary = [msg(0, "user", kind="summary"), *active[2:]]
    assert [m.seq for m in split_tail(with_summary, 2)[1]] == [2, 3, 4, 5, 6]


def test_preserved_are_the_last_pinned_and_users_own():
    active = [msg(i, "user" if i % 2 == 0 else "assistant") for i in range(10)]
    context = ActiveContext(seqs=list(range(10)), pinned=[3])
    assert preserved_seqs(context, active, 2, preserve_user=False) == {3, 8, 9}
    assert preserved_seqs(context, active, 2, preserve_user=True) == {0, 2, 3, 4, 6, 8, 9}


def test_level1_summarizes_files_not_used_lately():
    def att(path: str) -> Attachment:
        return Attachment(path=path, mode="full", block=f"<{path}>", summary=f"outline of {path}")
    active = [msg(0, "user", files=[att("a.py")]), msg(1, "assistant"),
              msg(2, "user", files=[att("b.py")]), msg(3, "assistant"),
              msg(4, "user", files=[att("c.py")]), msg(5, "assistant"),
              msg(6, "user", text="about b.py again", files=[att("b.py")])]
    context = ActiveContext(seqs=[m.seq for m in active])
    assert plan_file_summaries(context, active) == [0]  # b.py and c.py were used lately
    assert plan_file_summaries(ActiveContext(seqs=context.seqs, pinned=[0]), active) == []
    assert plan_file_summaries(ActiveContext(seqs=context.seqs, file_summaries=[0]), active) == []


def test_level2_keeps_the_more_relevant_half():
    active = [msg(i, "assistant") for i in range(6)]
    candidates = prune_candidates(ActiveContext(seqs=list(range(6))), active, preserved={5})
    assert [m.seq for m in candidates] == [0, 1, 2, 3, 4]
    dropped = plan_prune(candidates, [0.9, 0.1, 0.5, 0.2, 0.8])
    assert dropped == {1, 3}  # ceil(5 / 2) = 3 kept: 0, 4, 2


def test_the_estimator_fit_converges_to_a_tokenizer(tmp_path):
    """Fed the exact counts of one tokenizer, the fitted estimate lands within a few percent
    of texts it has not seen, and its measured margin says so."""
    from ctxkeep.daemon.context.estimator import Estimate
    store = Store.open(tmp_path)
    try:
        est = Estimator(store)
        rng = random.Random(7)
        words = ["context", "window", "model", "the", "a", "token", "summary", "def", "x = 1",
                 "{\"k\": [1, 2]}", "Überblick", "\n"]
        def sample(n: int) -> list[dict[str, str]]:
            return [{"role": "user", "content": " ".join(rng.choice(words) for _ in range(n))}]
        for i in range(40):
            prompt = sample(rng.randint(20, 400))
            exact = count_tokens(render(prompt))
            session = store.sessions.create(name=f"s{i}", model="m", system="", options={}, num_ctx=8192)
            guess = est.prompt("m", prompt)
            est.save(est.observe(session, prompt_features(prompt), exact, Estimate(guess, guess)))
        errors = []
        for _ in range(20):
            prompt = sample(rng.randint(50, 400))
            exact = count_tokens(render(prompt))
            errors.append(abs(est.prompt("m", prompt) - exact) / exact)
        assert max(errors) < 0.1
        assert est.margin("m") < 0.25 and est.calibrated("m")
        assert Estimator(store).prompt("m", prompt) == est.prompt("m", prompt)  # persisted
    finally:
        store.close()


TEXT = st.sampled_from(["", "hello world", "x = [1, 2]\n", "Größe über alles", "  spaced\n\n", "{}"])


@st.composite
def contexts(draw):
    """A session, its context state and active messages of every shape normalize meets."""
    from ctxkeep.daemon.store.records import SessionRecord
    from ctxkeep.daemon.store.context_records import Checkpoint
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
        user = MessageRecord(seq=1000 + turn, role="user", content=draw(TEXT), created=0.0)  # seqs are unique
        states.append((context, active, user))
    return session, states


@settings(max_examples=300, deadline=None)
@given(histories())
def test_folds_kept_across_turns_equal_folds_from_the_start(case):
    """Features and prompts folded on from a session's earlier contexts (context/fold.py)
    equal those computed from the start, however the context changed in between."""
    from ctxkeep.daemon.context.features import (
        FeatureCache, Folded, Segmented, context_features, fold_step, segment_step,
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
            assert prompts.build(session, context, active, user) == build_messages(session, context, active, user)


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


def test_a_summary_call_refused_as_too_long_is_split_and_retried(tmp_path):
    """An estimate too low for the model's tokenizer: the model refuses the call, which is
    cut in two at a paragraph and each half summarized (halves of halves if need be)."""
    import asyncio

    from ctxkeep.daemon.compaction.summarizer import Summarizer
    from ctxkeep.daemon.backends.protocol import ChatChunk, ModelCallError
    from ctxkeep.protocol import ErrorCode

    class Refusing:
        bodies: list[int] = []

        async def chat_once(self, model, messages, options):
            body = messages[-1]["content"]
            self.bodies.append(len(body))
            if len(body) > 1500:
                raise ModelCallError(ErrorCode.CONTEXT_OVERFLOW, "the input length exceeds the context length")
            return ChatChunk(done=True, eval_count=3, content=f"s{len(body)}")
    store = Store.open(tmp_path)
    try:
        summarizer = Summarizer(Refusing(), Estimator(store), "m", 8192, 512, 4000)
        body = "\n\n".join(f"paragraph {i}: " + "words of it " * 20 for i in range(20))
        text, tokens = asyncio.run(summarizer.call("sys", "", body, "Conversation to summarize:"))
        parts = text.split("\n\n")
        assert len(parts) >= 4 and all(p.startswith("s") for p in parts) and tokens == 3 * len(parts)
        assert max(Refusing.bodies) > 1500 and sorted(Refusing.bodies)[0] <= 1500
    finally:
        store.close()


def test_a_pass_that_changed_nothing_is_tried_again_only_for_a_reason():
    """Issue 42: every pass re-reads the prompt on a CPU; one that could not help waits until
    the context grew by a tenth of the window, or by two turns (older messages have left
    the verbatim tail since)."""
    from ctxkeep.daemon.compaction.passes import RETRY_GROWTH, RETRY_MESSAGES, worth_retrying
    assert worth_retrying(None, 1000, 10, 2048)
    assert not worth_retrying((1500, 10), 1500, 10, 2048) and not worth_retrying((1500, 10), 1600, 12, 2048)
    assert worth_retrying((1500, 10), 1500 + int(RETRY_GROWTH * 2048) + 1, 12, 2048)
    assert worth_retrying((1500, 10), 1510, 10 + RETRY_MESSAGES, 2048)


@pytest.mark.parametrize("window, options, room", [
    (1024, {}, 128), (32768, {}, 1024),             # an eighth of the window, at most reply_reserve_tokens
    (1024, {"num_predict": 40}, 40),                 # answers held to 40 tokens need no more
    (1024, {"num_predict": 500}, 128),
    (1024, {"num_predict": -1}, 128), (1024, {"num_predict": True}, 128),  # not a limit
])
def test_the_reply_room_is_what_an_answer_can_take(window, options, room):
    from ctxkeep.daemon.config import Config
    from ctxkeep.daemon.context.usage import reply_room
    from ctxkeep.daemon.store.records import SessionRecord
    session = SessionRecord(id="s", name="s", model="m", num_ctx=window, options=options, created=0, updated=0)
    assert reply_room(Config(), session) == room
