"""A pass after an answer asks its summaries as the continuation of the turn just answered
(issue 42), over both kinds of backend and real HTTP: the server holds that turn's prompt
and answer, so it reads only the request; where a compaction model of its own is set, the
summaries are asked on their own (that model's server holds no turn of the session)."""

import asyncio
import re

import pytest

from ctxkeep.daemon.backends.configured import backend_for
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.config.backends import BackendConfig
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionResult, GenerationError
from inprocess import InProcess
from ollama_standin import OllamaStandin
from openai_standin import OpenAIStandin

MODEL = "qwen2.5:7b"
HEADERS = ("Conversation to summarize", "Summary to shorten", "Summaries of")


def chat(tmp_path, kind: str, words: int = 40, **config) -> tuple[list[dict], InProcess]:
    """Twenty-four turns of long answers in a 2,048 window (each checkpoint `words` long):
    every request the server read."""
    standin = OllamaStandin() if kind == "ollama" else OpenAIStandin(n_ctx=2048)

    def reply(messages):
        if messages[-1]["content"].startswith(HEADERS[0]):  # checkpoints long enough to age, of what was said
            said = [w for m in messages[:-1] if m["role"] != "system" for w in m["content"].split()]
            steps = dict.fromkeys(w for w in said if w.isdigit())  # the facts a summary keeps
            return "Summary: steps " + " ".join([*steps, *said[:words]])
        if messages[-1]["content"].startswith(HEADERS):
            return "Summary: the user and the assistant discussed the plan."
        return " ".join(f"detail{len(messages)}x{i}" for i in range(80))
    standin.reply_fn = reply
    standin.start()
    table = BackendConfig(name="here", kind=kind, url=standin.url)
    app = InProcess(tmp_path, backend_for(Config(num_ctx=2048, backends=[table])),
                    Config(embed_builtin=False, num_ctx=2048, backends=[table], **config))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        for turn in range(24):
            await app.call(requests.Send(session=sid, text=f"step {turn} " * 20))
            await app.services.jobs.drain(30)
            app.services.jobs.closing = False
        await app.backend.close()
    try:
        asyncio.run(go())
    finally:
        standin.stop()
        app.close()
    assert not app.of_type(GenerationError) and not standin.refusals and not standin.truncations
    assert any(e.status == "ok" and e.level == 3 for e in app.of_type(CompactionResult))
    return [c.body for c in standin.chats], app


def last_turn(bodies: list[dict], before: int) -> list[dict]:
    """The prompt of the last turn the server answered before request `before`."""
    return next(b["messages"] for b in reversed(bodies[:before])
                if not b["messages"][-1]["content"].startswith(HEADERS) and b.get("stream", True))


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_a_pass_after_an_answer_goes_on_from_the_turn_the_server_holds(tmp_path, kind):
    """Each summary of the pass opens as the last turn's prompt did: a checkpoint with the
    messages it replaces (then one request), an aging with the system message."""
    bodies, _ = chat(tmp_path, kind)
    assert {b["model"] for b in bodies} == {MODEL}
    summaries = [(i, b["messages"]) for i, b in enumerate(bodies) if b["messages"][-1]["content"].startswith(HEADERS)]
    checkpoints = [(i, m) for i, m in summaries if m[-1]["content"].startswith(f"{HEADERS[0]}:\n\nthe conversation above")]
    agings = [(i, m) for i, m in summaries if m[-1]["content"].startswith(HEADERS[1])]
    assert checkpoints and agings
    for i, messages in checkpoints + agings:
        turn = last_turn(bodies, i)
        assert messages[:-1] == turn[:len(messages) - 1]  # as the server read it
    assert all(m[-2]["role"] == "assistant" for _, m in checkpoints)  # a request follows an answer
    assert all(len(m) == 2 and m[0]["role"] == "system" for _, m in agings)  # the system message, then the request
    # checkpoints the system message shows are named there by their headings, not quoted again
    # (one made since that turn, or after a call that went on its own, is quoted)
    named = [m[-1]["content"].split("\n\n")[1] for _, m in agings]
    named = [n for n in named if n.startswith(("the summary under \u201c[", "the summaries under \u201c["))]
    assert any(n.startswith("the summaries under") for n in named)  # a merge among them
    assert len(named) >= len(agings) // 2 and all(n.endswith("of the conversation above.") for n in named)


def test_a_new_checkpoint_leaves_the_earlier_ones_as_the_server_holds_them(tmp_path):
    """Checkpoints with room to spare do not age: a pass puts its checkpoint after the others,
    so the prompt after it opens as the prompts before it did, through those (the server
    reads again only what follows them). They change otherwise only where they aged."""
    bodies, _ = chat(tmp_path, "ollama", words=6)
    agings = [i for i, b in enumerate(bodies) if b["messages"][-1]["content"].startswith(HEADERS[1:])]
    blocks = [(i, b["messages"][0]["content"].partition("Summary of the earlier conversation")[2])
              for i, b in enumerate(bodies) if not b["messages"][-1]["content"].startswith(HEADERS)]
    changes = [(i, j, a, b) for (i, a), (j, b) in zip(blocks, blocks[1:]) if a != b]
    assert len([1 for _, _, a, b in changes if a and b.startswith(a)]) >= 3  # appended to what the server held
    assert all(any(i < k < j for k in agings) or aged_in_place(a, b) for i, j, a, b in changes if not b.startswith(a))


AGES = ("recent", "old", "ancient", "merged")
HEADING = re.compile(r"\[(recent|old|ancient|merged) checkpoint, messages (\d+)-(\d+)")


def aged_in_place(before: str, after: str) -> bool:
    """Whether `after` holds `before`'s checkpoints (the same messages) each as old or older
    and one older at least: an aging that had room for them as they were (no summary call)."""
    old, new = HEADING.findall(before), HEADING.findall(after)
    same = [(f, last) for _, f, last in old] == [(f, last) for _, f, last in new[:len(old)]]
    ages = [(AGES.index(a), AGES.index(b)) for (a, _, _), (b, _, _) in zip(old, new)]
    return same and all(b >= a for a, b in ages) and any(b > a for a, b in ages)


def test_a_compaction_model_of_its_own_summarizes_on_its_own(tmp_path):
    bodies, _ = chat(tmp_path, "ollama", compaction_model="small:1b")
    summaries = [b["messages"] for b in bodies if b["model"] == "small:1b"]
    assert summaries and all(len(m) == 2 and m[0]["role"] == "system" for m in summaries)
    assert all(m[-1]["content"].startswith(HEADERS) for m in summaries)
