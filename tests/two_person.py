"""Long two-person chats with planted facts, and the questions a reader asks about them: the
data of the recall bench's `--mode pair` (bench/recall_synthetic.py) and its test.

Two friends write to each other for months (the first's lines are the user's messages, the
second's the assistant's), each line opened with its writer's name, as chat logs are: so the
two names are in every message and tell nothing apart. Among everyday chatter each says things
about themselves in the first person — where they live, their work, their children, a pet they
took in, what they took up and when — and some of it changes later. The questions are asked
from outside, in the third person and mostly the present tense ("How many kids does Melanie
have?", "Where does Caroline live these days?"): they say no "my", "I" or "you said", and name
someone whose name every turn holds.
"""

from __future__ import annotations

import random

from conversations import CITIES, FILLER_TOPICS, HOBBIES, JOBS, MONTHS, PETS, Conversation, Question, Turn

PAIRS = [("Caroline", "Melanie"), ("Jon", "Gina"), ("Audrey", "Andrew"), ("Nate", "Joanna"),
         ("Deborah", "Jolene"), ("Evan", "Sam"), ("Calvin", "Dave"), ("Maria", "John")]
KIDS = ["one kid", "two kids", "three kids", "four kids"]
CHATTER = ["Hey {o}! How have you been?", "Ha, that's so you, {o}.", "Same here, honestly.",
           "Oh no, I hope it gets better soon.", "That sounds lovely!", "Thanks, {o}, that means a lot.",
           "I know, right? Anyway, how's your week going?", "Talk soon!"]


def _said(rng: random.Random, name: str, other: str, attribute: str, first: bool,
          value: str) -> str:
    """One fact about `name`, in their own words."""
    if attribute == "city":
        return (f"I live in {value} now, we like how quiet it is." if first else
                f"Big news, {other}: we packed everything and moved to {value} last week!")
    if attribute == "job":
        return f"I work as {value} these days." if first else f"I quit my old job, I'm {value} now."
    if attribute == "kids":
        return f"I have {value}, they keep me busy every single day."
    if attribute == "pet":
        return f"We adopted {value} from the shelter last weekend!"
    return f"I started learning {value}."


def _chatter(rng: random.Random, name: str, other: str) -> str:
    if rng.random() < 0.4:
        return f"{name}: {rng.choice(CHATTER).format(o=other)}"
    topic, words = rng.choice(list(FILLER_TOPICS.items()))
    return f"{name}: Been busy with {topic} lately, " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + "."


def generate(seed: int = 1, turns: int = 400, labels: bool = True) -> Conversation:
    """A chat of `turns` exchanges between two friends, and its questions; without `labels`,
    its messages do not open with their writer's name (a chat replayed with each writer as a
    role), so a name is only where one writer greets or thanks the other by it."""
    rng = random.Random(seed)
    a, b = rng.choice(PAIRS)
    other = {a: b, b: a}
    plan = [(name, attribute) for name in (a, b) for attribute in ("city", "job", "kids", "pet", "hobby")]
    rng.shuffle(plan)
    updates = [p for p in plan if p[1] in ("city", "job")][:2]
    events = plan + updates  # an update tells the attribute again, later
    slots = dict(zip(sorted(rng.sample(range(turns), len(events))), events))
    latest: dict[tuple[str, str], tuple[int, str]] = {}  # (name, attribute) -> (turn, the message)
    values: dict[tuple[str, str], str] = {}
    started: dict[str, tuple[str, str]] = {}  # name -> (hobby, day)
    out: list[Turn] = []
    for i in range(turns):
        lines = {a: _chatter(rng, a, b), b: _chatter(rng, b, a)}
        if i in slots:
            name, attribute = slots[i]
            first = (name, attribute) not in latest
            value = {"city": lambda: rng.choice(CITIES), "job": lambda: rng.choice(JOBS),
                     "kids": lambda: rng.choice(KIDS), "pet": lambda: rng.choice(PETS),
                     "hobby": lambda: rng.choice(HOBBIES)}[attribute]()
            text = f"{name}: " + _said(rng, name, other[name], attribute, first, value)
            if attribute == "hobby":
                day = f"{rng.randint(1, 28)} {rng.choice(MONTHS)}"
                text = f"{text[:-1]} on {day}."
                started[name] = (value, day)
            lines[name] = text
            latest[(name, attribute)] = (i, text)
            values[(name, attribute)] = value
        out.append(Turn(lines[a], lines[b]))
    if not labels:
        plain = {line: line.split(": ", 1)[1] for t in out for line in (t.user, t.assistant)}
        out = [Turn(plain[t.user], plain[t.assistant]) for t in out]
        latest = {key: (turn, plain[text]) for key, (turn, text) in latest.items()}
    questions = []
    for name in (a, b):
        for attribute, asked in (("city", f"Where does {name} live these days?"),
                                 ("job", f"What does {name} do for a living now?"),
                                 ("kids", f"How many children does {name} have?"),
                                 ("pet", f"What animal did {name} take in from the shelter?"),
                                 ("hobby", f"When did {name} begin the new lessons?")):
            turn, text = latest[(name, attribute)]
            kind = "updated" if (name, attribute) in updates else "when" if attribute == "hobby" else "single"
            questions.append(Question(kind, asked, [turn], [text]))
        pet = values[(name, "pet")]
        questions.append(Question("multi_hop", f"The one of them who took in {pet} — which city are they in?",
                                  [latest[(name, "pet")][0], latest[(name, "city")][0]],
                                  [latest[(name, "pet")][1], latest[(name, "city")][1]]))
    return Conversation(out, questions)
