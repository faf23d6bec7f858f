"""The context engine's pure parts, in-process: prompt normalization, the manual
compaction's tail, the automatic levels' planners and the estimator's fit."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.compaction.planner import (
    plan_file_summaries,
    plan_prune,
    preserved_seqs,
    prune_candidates,
    split_tail,
)
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.features import prompt_features
from ctxkeep.daemon.context.prompt import normalize
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import Attachment, MessageRecord
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


def test_the_last_messages_kept_start_with_a_question():
    """Issue 42: an answer kept without its question (summarized) opened the prompt as the
    model's turn, and moved the start of the prompt the server holds in its cache."""
    active = [msg(i, "user" if i % 2 == 0 else "assistant") for i in range(10)]
    context = ActiveContext(seqs=list(range(10)))
    assert preserved_seqs(context, active, 3, preserve_user=False) == {6, 7, 8, 9}
    assert preserved_seqs(context, active, 4, preserve_user=False) == {6, 7, 8, 9}
    assert preserved_seqs(context, active, 0, preserve_user=False) == set()
    tools = [msg(0, "user"), msg(1, "assistant"), msg(2, "tool"), msg(3, "assistant")]
    assert preserved_seqs(ActiveContext(seqs=[0, 1, 2, 3]), tools, 1, preserve_user=False, keep_tools=0) == {3}


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


def test_an_anchor_counted_for_another_model_is_not_built_on(tmp_path):
    """A session whose model was changed after a turn keeps the old model's count (its
    anchor) until a turn of the new model counts again: the new model's estimate is of the
    whole prompt, as for a session never counted, not of what was added since."""
    from ctxkeep.daemon.context.features import add
    from ctxkeep.daemon.store.prompt_count import Anchor
    from ctxkeep.daemon.store.records import SessionRecord
    from ctxkeep.daemon.tokens import text_features
    store = Store.open(tmp_path)
    try:
        est = Estimator(store)
        counted = text_features("a conversation of some length " * 200)
        now = add(counted, text_features("and one more question"))
        session = SessionRecord(id="s", name="s", model="new", num_ctx=8192, created=0.0, updated=0.0)
        never = est.of_features(session, now)
        session.anchor = Anchor(tokens=1500, features=list(counted), model="old")
        assert est.of_features(session, now) == never
        session.anchor = Anchor(tokens=1500, features=list(counted), model="new")
        assert est.of_features(session, now).tokens == 1500 + est.estimate("new", text_features("and one more question"))
    finally:
        store.close()


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


def test_a_summary_call_refused_as_too_long_is_split_and_retried(tmp_path):
    """An estimate too low for the model's tokenizer: the model refuses the call, which is
    cut in two at a paragraph and each half summarized (halves of halves if need be)."""
    import asyncio

    from ctxkeep.daemon.backends.protocol import ChatChunk, ModelCallError
    from ctxkeep.daemon.compaction.summarizer import Summarizer
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


def test_a_new_checkpoint_takes_at_most_a_quarter_of_what_it_replaces():
    """Issue 42: Gemma 3 270M writes every summary to its cap, and writing is what a pass
    spends most of its time on; a checkpoint of ~500 tokens of answers was ~280 tokens."""
    from ctxkeep.daemon.compaction.checkpoint_sizes import LEAST_SUMMARY, summary_room, target
    from ctxkeep.daemon.context.usage import Budget
    budget = Budget(window=2048, reply=64, system=0, goals=0, pinned=0, checkpoints=0, files=0, summaries=0,
                    conversation=0)
    assert target(budget, "recent") == int(1984 * 0.15)
    assert summary_room(budget, 504) == 126
    assert summary_room(budget, 4000) == target(budget, "recent")  # never more than its age's size
    assert summary_room(budget, 100) == LEAST_SUMMARY
