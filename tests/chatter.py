"""Everyday chatter for recall's tests: filler words, a fact to recall later, and a model
that answers with filler (and with a short summary when asked to compact)."""

import random

FILLER = "weather tea garden walk book music film cooking travel sleep coffee bread river cloud".split()
FACT = "By the way, my sister Alice moved to Lisbon in March."


def filler_reply(messages: list[dict]) -> str:
    """An answer of 30 filler words (the same for the same conversation length)."""
    if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
        return "Summary: they chatted."
    return "Sure. " + " ".join(random.Random(len(messages)).choice(FILLER) for _ in range(30))
