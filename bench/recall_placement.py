"""Where recall's block goes, as a real small model answers: before the question or after it.

Gemma 3 270M on llama-cpp-python's server (the real-model step's install), greedy: each fact
was said earlier, two unrelated exchanges follow, and the question about it comes with the
fact recalled in ctxkeepd's own block (retrieval/select.py's opening and closing), once before
the question (as until stop 56) and once after it (as now: the next turn's prompt is then
the server's cache up to the block). A line per answer, then the count of answers that hold
the fact per placement. A probe of the model's reading, not of recall (bench/recall.py
measures which turns come back; the placement does not change that).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import emit

from ctxkeep.daemon.retrieval.select import CLOSING, OPENING
from real_model import MODEL, start_llama

#: (what the user said once, the question about it, what a right answer holds)
FACTS = [
    ("Please remember this: my locker code is 4711-blue.", "What is my locker code?", "4711"),
    ("By the way, my sister Alice moved to Lisbon in March.", "Where does Alice live these days?", "Lisbon"),
    ("My dog is called Pepper and she is a beagle.", "What is my dog's name?", "Pepper"),
    ("I parked the car on level 3, spot 42.", "Which spot did I park in?", "42"),
    ("My favourite colour is teal.", "What is my favourite colour?", "teal"),
    ("The wifi password at the cabin is sunflower77.", "What is the cabin's wifi password?", "sunflower77"),
    ("My dentist appointment is on Thursday at 3 pm.", "When is my dentist appointment?", "Thursday"),
    ("I am allergic to peanuts.", "What am I allergic to?", "peanut"),
    ("Our team meeting moved to room B12.", "Which room is the team meeting in?", "B12"),
    ("My bike lock combination is 5 5 2 9.", "What is my bike lock combination?", "5"),
    ("I was born in Tromsø.", "Where was I born?", "Troms"),
    ("The plumber's name is Marek.", "What is the plumber's name?", "Marek"),
]
BETWEEN = [("What should I plant in a shady garden corner?", "Ferns, hostas and astilbe do well in shade."),
           ("Any tips for a rainy weekend?", "Board games, a good book, or baking bread.")]


def block(fact: str) -> str:
    """The fact and its answer as ctxkeepd's recall block shows them."""
    return "\n".join([OPENING, f"[2026-11-24 16:24] user: {fact}", "[2026-11-24 16:24] assistant: Noted!", CLOSING])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer", type=int, default=40, help="the most tokens an answer takes")
    args = parser.parse_args()
    import openai
    url, server = start_llama(2048)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=300)
    between = [m for q, a in BETWEEN for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    held = {"before": 0, "after": 0}
    try:
        for fact, question, right in FACTS:
            for placement, text in (("before", f"{block(fact)}\n\n{question}"), ("after", f"{question}\n\n{block(fact)}")):
                reply = client.chat.completions.create(
                    model=MODEL, messages=[*between, {"role": "user", "content": text}],
                    max_tokens=args.answer, temperature=0.0, seed=1)
                answer = reply.choices[0].message.content or ""
                holds = right.lower() in answer.lower()
                held[placement] += holds
                emit(bench="recall_placement", question=question, placement=placement, holds_fact=holds,
                     answer=answer[:120])
    finally:
        server.terminate()
        server.wait(10)
    emit(bench="recall_placement", facts=len(FACTS), **{f"held_{k}": v for k, v in held.items()})


if __name__ == "__main__":
    main()
