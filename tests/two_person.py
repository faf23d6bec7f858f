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

from conversations import CITIES, HOBBIES, JOBS, MONTHS, PETS, Conversation, Question, Turn

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


#: What friends tell each other in passing, a sentence at a time, put together from parts so
#: that few sentences come twice in a chat (as in real chat, where the same words recur but
#: seldom the same sentence): some of it near what the questions ask (a neighbour's kids, a
#: cousin's new job, a trip to a city, the living room), as real chat is.
WHEN = ["This morning", "Last night", "Yesterday", "On Sunday", "After work", "Earlier today", "Over the weekend",
        "On my lunch break", "Tonight", "Last week", "On Friday", "Before breakfast"]
DID = ["I finally cleaned out the garage", "I tried a new pasta recipe with roasted garlic", "I went for a run along the river",
       "I binged half a season of that baking show", "I fixed the leaking tap in the kitchen", "I repotted the plants in the living room",
       "I had coffee at that little place near the station", "I called my grandma", "I sorted through a pile of old photos",
       "I took the long way home through the park", "I baked bread for the first time", "I went to a pub quiz with some coworkers",
       "I painted the bathroom door", "I walked to the farmers market", "I played board games with my cousins",
       "I tried the climbing gym downtown", "I cooked a huge pot of chili", "I cleaned my bike and pumped the tyres",
       "I watched the storm roll in from the balcony", "I went to a jazz concert", "I reorganised my bookshelf",
       "I helped my neighbour carry a sofa up the stairs", "I visited the science museum", "I made pancakes for everyone",
       "I finished a mystery novel", "I fell asleep on the couch by nine", "I tried to learn a card trick",
       "I spent an hour on the phone with my bank", "I went swimming at the public pool", "I bought a secondhand lamp"]
HOW = ["and it was honestly great", "and I'm still tired from it", "which took way longer than I thought",
       "and I regret nothing", "and it was kind of a disaster", "and I'd do it again", "so that's my news",
       "and my back is not happy about it", "and it made my whole day", "and I laughed the entire time",
       "but the weather ruined half of it", "and now I want to do it every week"]
ASIDES = ["My neighbour's kids were practising the drums all afternoon.", "My cousin just got a new job at a bank.",
          "A friend of mine is visiting Prague next month.", "The train was delayed again.",
          "Work has been hectic lately.", "Our landlord finally repainted the hallway.", "My phone screen cracked.",
          "The weather has been grey all week.", "I'm trying to stick to a budget this month.",
          "My sister says hi.", "I barely slept, the street was so loud.", "The office moved us to a new floor."]


def _small_talk(rng: random.Random) -> str:
    said = f"{rng.choice(WHEN)} {rng.choice(DID)}, {rng.choice(HOW)}."
    return f"{said} {rng.choice(ASIDES)}" if rng.random() < 0.3 else said


def _chatter(rng: random.Random, name: str, other: str) -> str:
    if rng.random() < 0.4:
        return f"{name}: {rng.choice(CHATTER).format(o=other)}"
    return f"{name}: " + " ".join(_small_talk(rng) for _ in range(rng.randint(1, 2)))


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
