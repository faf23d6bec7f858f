"""Long conversations with planted facts and the questions that need them: the data the
recall bench (bench/recall.py) and its test replay through the daemon.

A conversation is days of chat between a user and an assistant: mostly everyday filler
on many topics, among which the user mentions facts about people they know (where they
live, their work, pets, what they took up and when), some of which change later. Each
question asks about one fact in other words than it was told ("Where does Maya live
now?" after "Maya moved to Porto"), or needs two facts at once, or asks when something
happened; each names the turns that hold its answer (the evidence).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NAMES = ["Maya", "Tomas", "Ingrid", "Ravi", "Leona", "Kofi", "Anouk", "Dmitri", "Yuki", "Bram",
         "Selma", "Oskar", "Priya", "Mateo", "Hanna", "Emeka", "Lotte", "Farid", "Greta", "Jonas"]
RELATIONS = ["my sister", "my neighbour", "a colleague of mine", "my cousin", "an old friend",
             "my brother-in-law", "my flatmate", "my manager", "a friend from the climbing gym"]
CITIES = ["Lisbon", "Porto", "Ghent", "Tallinn", "Lyon", "Bergen", "Kraków", "Valencia", "Utrecht",
          "Trieste", "Aarhus", "Bologna", "Dresden", "Cork", "Graz"]
JOBS = ["a nurse", "a carpenter", "a data analyst", "a pastry chef", "a lawyer", "a pilot",
        "a librarian", "a physiotherapist", "an electrician", "a translator", "a vet"]
PETS = ["a parrot", "a greyhound", "two cats", "a tortoise", "a rabbit", "a ferret", "a corgi",
        "a hedgehog", "a cockatiel", "three goldfish", "a dachshund", "a pair of budgies",
        "a bearded dragon", "a husky", "a guinea pig", "a chinchilla", "a border collie",
        "a snake", "two hamsters", "a poodle", "a siamese cat"]
HOBBIES = ["the violin", "pottery", "Japanese", "sailing", "chess", "salsa dancing", "bouldering"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]

FILLER_TOPICS = {
    "cooking": "recipe oven simmer garlic onions sauce pan roast spices dinner leftovers soup".split(),
    "weather": "rain forecast sunny cloudy wind umbrella chilly humid storm temperature".split(),
    "gardening": "tomatoes seedlings compost soil watering pruning roses weeds harvest shed".split(),
    "software": "deploy bug refactor database query latency tests release branch merge".split(),
    "reading": "novel chapter author library paperback plot characters poetry biography".split(),
    "fitness": "running stretching knees interval pace marathon gym shoes hydration".split(),
    "music": "playlist album concert guitar chords rhythm vinyl headphones melody".split(),
    "travel": "train tickets luggage hostel itinerary museum timetable passport map".split(),
    "home": "laundry vacuum shelves paint curtains boiler rent landlord furniture".split(),
    "money": "budget savings invoice taxes receipts subscription bank spreadsheet".split(),
}
OPENERS = ["Quick question about {t}:", "I've been thinking about {t} again.", "Random thing, {t}.",
           "Can you help me with {t}?", "So, {t} today.", "Back to {t} for a moment."]
ANSWERS = ["That makes sense. A few thoughts:", "Good question. Here is how I would look at it:",
           "Sure. The main points are:", "Here is a short take:", "It depends, but usually:"]


@dataclass
class Turn:
    user: str
    assistant: str
    #: Facts this turn states (by key), for the questions' evidence.
    facts: list[str] = field(default_factory=list)


@dataclass
class Question:
    kind: str  # "single", "updated", "when", "multi_hop"
    text: str
    #: The indexes of the turns whose user message holds the answer.
    evidence: list[int]
    #: The messages that hold it, where not the user's of those turns (two_person.py).
    said: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    turns: list[Turn]
    questions: list[Question]


def _filler(rng: random.Random) -> Turn:
    topic, words = rng.choice(list(FILLER_TOPICS.items()))
    body = " ".join(rng.choice(words) for _ in range(rng.randint(12, 40)))
    user = f"{rng.choice(OPENERS).format(t=topic)} {body}."
    answer = f"{rng.choice(ANSWERS)} " + " ".join(rng.choice(words) for _ in range(rng.randint(20, 60))) + "."
    return Turn(user, answer)


def _ack(rng: random.Random) -> str:
    return rng.choice(["Good to know, thanks for telling me.", "Noted! That sounds like a big change.",
                       "Nice, I'll keep that in mind.", "Oh, interesting. How are they finding it?"])


def generate(seed: int = 1, turns: int = 500, people: int = 12) -> Conversation:
    """A conversation of about `turns` turns, facts about `people` people, and its questions."""
    rng = random.Random(seed)
    who = rng.sample(NAMES, people)
    relation = {name: rng.choice(RELATIONS) for name in who}
    out: list[Turn] = []
    latest: dict[tuple[str, str], int] = {}  # (name, attribute) -> turn index
    said_when: dict[tuple[str, str], tuple[int, str]] = {}
    pets: dict[str, str] = {}
    questions: list[Question] = []
    plan: list[tuple[str, str]] = []  # (name, attribute) in the order they are told
    for name in who:
        for attribute in ("city", "job", "pet", "hobby"):
            plan.append((name, attribute))
    rng.shuffle(plan)
    updates = [p for p in plan if p[1] in ("city", "job")][: people // 2]
    events = plan + updates  # each update tells the attribute again, later
    gaps = sorted(rng.sample(range(turns), len(events)))
    for i in range(turns):
        if gaps and gaps[0] == i:
            gaps.pop(0)
            name, attribute = events.pop(0)
            first = (name, attribute) not in latest
            rel = relation[name]
            if attribute == "city":
                city = rng.choice(CITIES)
                text = (f"{name}, {rel}, lives in {city}." if first else
                        f"Big news from {name}: she packed everything and moved to {city} last week.")
            elif attribute == "job":
                job = rng.choice(JOBS)
                text = (f"{name} ({rel}) works as {job}." if first else
                        f"{name} quit her old job and now works as {job}.")
            elif attribute == "pet":
                pet = pets[name] = rng.choice([p for p in PETS if p not in pets.values()] or PETS)
                text = f"{name} adopted {pet} from the shelter."
            else:
                day = f"{rng.randint(1, 28)} {rng.choice(MONTHS)}"
                text = f"{name} started learning {rng.choice(HOBBIES)} on {day}."
                said_when[(name, attribute)] = (i, day)
            latest[(name, attribute)] = i
            out.append(Turn(f"By the way, {text}", _ack(rng), facts=[f"{name}:{attribute}"]))
        else:
            out.append(_filler(rng))
    for name in who:
        questions.append(Question("updated" if (name, "city") in dict.fromkeys(updates) else "single",
                                  f"Which city is {name} living in these days?", [latest[(name, "city")]]))
        questions.append(Question("updated" if (name, "job") in dict.fromkeys(updates) else "single",
                                  f"What does {name} do for a living now?", [latest[(name, "job")]]))
        turn, _ = said_when[(name, "hobby")]
        questions.append(Question("when", f"When did {name} begin the new lessons?", [turn]))
    unique = [n for n in who if list(pets.values()).count(pets[n]) == 1]
    for name in rng.sample(unique, min(6, len(unique))):
        questions.append(Question(
            "multi_hop", f"The person who took in {pets[name]} from the shelter — which city are they in?",
            [latest[(name, "pet")], latest[(name, "city")]]))
    return Conversation(out, questions)
