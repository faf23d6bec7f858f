"""Recall ranks what was stated above what was only asked (select.statements_first): in a
long chat that asked the same kind of question about many people, the next one recalls the
fact it needs, not the earlier questions that share all its words but the name, nor the
facts their names bring back."""

import asyncio
import random

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
NAMES = ["Maya", "Tomas", "Ingrid", "Ravi", "Leona", "Kofi", "Anouk", "Dmitri", "Yuki", "Bram", "Selma", "Oskar",
         "Priya", "Mateo", "Hanna", "Emeka", "Lotte", "Farid", "Greta", "Jonas"]
HOBBIES = ["the violin", "pottery", "sailing", "chess", "salsa dancing", "bouldering"]
FILLER = "recipe oven simmer garlic onions sauce pan roast spices dinner leftovers soup rain forecast".split()


def test_a_question_recalls_the_fact_it_needs_before_earlier_questions_like_it(tmp_path):
    """Recall's room holds a few lines (recall_budget): they are the best it found."""
    rng = random.Random(7)
    backend = MemoryBackend(reply=lambda messages: "Noted.")
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False, recall_budget=120))
    facts = {name: f"By the way, {name} started learning {rng.choice(HOBBIES)} on {rng.randint(1, 28)} May."
             for name in NAMES}
    filler = lambda: " ".join(rng.choice(FILLER) for _ in range(40))

    async def scenario() -> list:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id

        async def ask(text: str):
            accepted = await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
            return accepted
        for name in NAMES:
            await ask(facts[name])
            await ask(f"By the way, {name} lives in a flat by the river.")
        for _ in range(20):
            await ask(filler())
        for name in NAMES[1:]:
            await ask(f"When did {name} begin the new lessons?")
        for _ in range(20):
            await ask(filler())
        last = await ask(f"When did {NAMES[0]} begin the new lessons?")  # of the first told
        return [p for e in app.bus.seen if isinstance(e, GenerationRecalled) and e.generation_id == last.generation_id
                for p in e.recalled]
    try:
        recalled = asyncio.run(scenario())
    finally:
        app.close()
    asked = f"When did {NAMES[0]} begin the new lessons?"
    prompt = next("\n".join(m["content"] for m in sent) for sent, _ in reversed(backend.chats)
                  if sent[-1]["content"].startswith(asked))
    # recalled, or kept word for word by a checkpoint (compaction/fact_check.py)
    assert facts[NAMES[0]] in prompt, [p.text for p in recalled]
