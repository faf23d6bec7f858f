"""Memory's precision on a small haystack (issue 58): requests no session is about, and
follow-ups of the chat just held, get nothing from other sessions — though the haystack
holds their words — while questions about what the user said still do."""

import asyncio

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from memory_backend import MemoryBackend
from unrelated import FOLLOW_UPS, UNRELATED

MODEL = "qwen2.5:7b"
#: Past chats, some about the user, some everyday requests with the unrelated ones' words.
HAYSTACK = {
    "garden": ["My allotment is plot 14 by the canal; this year I grow tomatoes and runner beans.",
               "Plot 14 sounds lovely. Tomatoes like a sunny spot."],
    "dog": ["Our dog Biscuit is a border collie, three years old, and hates thunder.",
            "Border collies are sensitive to noise; a quiet room helps Biscuit."],
    "poems": ["Write a short poem about spring rain on a window.",
              "Spring rain taps the window, a soft and silver sound."],
    "travel": ["We spent a week in Canada last May, mostly in Quebec City and Montreal.",
               "Quebec City in May is beautiful."],
    "maths": ["What's 12% of 300? And how many seconds are in a day?", "36, and 86,400 seconds."],
    "words": ["Translate 'good night' into French and Japanese.", "Bonne nuit; oyasumi nasai."],
}
RELATED = ["What is my allotment plot number?", "What breed is our dog Biscuit?",
           "Which cities did we visit in Canada?"]


def recalled_from_elsewhere(app: InProcess, accepted) -> list:
    return [p for e in app.bus.seen if isinstance(e, GenerationRecalled) and e.generation_id == accepted.generation_id
            for p in e.recalled if p.session_id]


def app_for(tmp_path, reply=lambda messages: "Noted.") -> InProcess:
    """The engine in-process, by words alone."""
    return InProcess(tmp_path, MemoryBackend(reply=reply), Config(embed_model="", embed_builtin=False))


async def ask(app: InProcess, sid: str, text: str) -> list:
    """One turn; what it recalled from other sessions."""
    accepted = await app.call(requests.Send(session=sid, text=text))
    await app.services.jobs.drain(30)
    return recalled_from_elsewhere(app, accepted)


async def new(app: InProcess, name: str = "", said: str = "") -> str:
    """A new session (named), where `said` is told first."""
    sid = (await app.call(requests.SessionCreate(name=name, model=MODEL, num_ctx=4096))).session.id
    if said:
        await ask(app, sid, said)
    return sid


def test_unrelated_requests_and_follow_ups_get_nothing_from_memory(tmp_path):
    app = app_for(tmp_path)

    async def scenario():
        for name, (user, _) in HAYSTACK.items():
            await new(app, name, user)
        unrelated = [await ask(app, await new(app), text) for text in UNRELATED]
        chat = await new(app, said="Tell me a fun fact about octopuses.")
        follow_ups = [await ask(app, chat, text) for text in FOLLOW_UPS]
        related = [await ask(app, await new(app), text) for text in RELATED]
        return unrelated, follow_ups, related
    try:
        unrelated, follow_ups, related = asyncio.run(scenario())
    finally:
        app.close()
    given = [u for u in unrelated + follow_ups if u]
    assert len(given) <= 0.05 * len(unrelated + follow_ups), [(p.session_name, p.text[:40]) for u in given for p in u]
    assert all(related), related  # what the user said of themselves still comes back
    assert {p.session_name for r in related for p in r} >= {"garden", "dog", "travel"}


def test_a_word_said_in_passing_names_no_subject(tmp_path):
    """One of a question's six rare words, held in passing ("lately"), brings nothing; the
    passage that holds two of them (the subject) comes back."""
    app = app_for(tmp_path)
    question = "I've been having trouble with the battery life on my phone lately. Any tips?"

    async def scenario() -> tuple[list, list]:
        await new(app, "cooking", "I've been so busy lately that I barely cook.")
        await new(app, "music", "I've been listening to a lot of jazz lately, mostly Coltrane.")
        await new(app, "garden", "My allotment is plot 14 by the canal.")
        in_passing = await ask(app, await new(app), question)
        await new(app, "charger", "My phone's battery dies by noon since the last update.")
        return in_passing, await ask(app, await new(app), question)
    try:
        in_passing, about_it = asyncio.run(scenario())
    finally:
        app.close()
    assert in_passing == []
    assert {p.session_name for p in about_it} == {"charger"}


def grown(tmp_path, walk: str, answer: str) -> set[tuple[str, str]]:
    """(session, role) of what memory brings to "What do I grow on my allotment by the
    canal?" beside the allotment's chat and a walk's (`walk`, answered `answer`)."""
    replies = iter(["Tomatoes and beans will do well there.", answer])
    app = app_for(tmp_path, reply=lambda messages: next(replies, "Noted."))

    async def scenario() -> list:
        await new(app, "allotment", "On my allotment by the canal I grow tomatoes and runner beans.")
        await new(app, "walk", walk)
        return await ask(app, await new(app), "What do I grow on my allotment by the canal?")
    try:
        recalled = asyncio.run(scenario())
    finally:
        app.close()
    by = {(p.session_name, p.role) for p in recalled}
    assert ("allotment", "user") in by and ("allotment", "assistant") in by, by
    return by


def test_a_session_that_matched_less_well_brings_its_passage_alone(tmp_path):
    """The best-matching session's passages come with their partners (the answer to a
    question); one that matched less well brings the passage that matched, not its answer."""
    by = grown(tmp_path, "We walked along the canal to see what the neighbours grow.",
               "Glad you enjoyed it, walks are good for you.")
    assert ("walk", "user") in by and ("walk", "assistant") not in by, by


def test_an_everyday_request_is_named_by_what_the_user_said_not_by_a_generic_answer(tmp_path):
    """A request that does not speak of the user's past gets memory only where the user's
    own words name its subject: an old answer's "20 minutes … each week" does not make "How
    many minutes are in a week?" about that chat; "the quince trees by the wall" the user
    planted does make the question about them come back."""
    replies = iter(["Set a timer for 20 minutes a day and give each room one session each week.",
                    "Quince trees like a warm wall; water them well in the first summer."])
    app = app_for(tmp_path, reply=lambda messages: next(replies, "Noted."))

    async def scenario() -> tuple[list, list]:
        await new(app, "routine", "How do I stick to a cleaning routine when I lose steam?")
        await new(app, "orchard", "I planted two quince trees by the old garden wall.")
        return (await ask(app, await new(app), "How many minutes are in a week?"),
                await ask(app, await new(app), "How are the quince trees by the wall doing?"))
    try:
        minutes, quinces = asyncio.run(scenario())
    finally:
        app.close()
    assert minutes == [], [(p.session_name, p.text[:40]) for p in minutes]
    assert ("orchard", "user") in {(p.session_name, p.role) for p in quinces}, quinces


def test_a_session_that_matched_less_well_brings_what_the_user_said_not_the_answers_words(tmp_path):
    """A question about the user's own words ("what do I grow…") takes from a session that
    matched less well only what the user said there: the model's answer in it that repeats
    the question's words ("allotments along the canal") says nothing of the user."""
    by = grown(tmp_path, "We walked along the canal on Sunday.",
               "Canal walks are lovely; the allotments along the canal grow all sorts in summer.")
    assert ("walk", "assistant") not in by, by


def test_what_the_user_said_before_asking_comes_back(tmp_path):
    """A turn that says something of the user and then asks ("I've been wearing my Fitbit …
    can you suggest …?") states it: it is not ranked down as a question only, below another
    session's request that merely names the same things."""
    app = app_for(tmp_path)

    async def scenario() -> list:
        await new(app, "walking", "I've been wearing my Fitbit Versa 3 every day since March. "
                                  "Can you suggest ways to walk more?")
        await new(app, "shopping", "Compare the Fitbit watches people wear every day: the Fitbit Versa 3, "
                                   "the Fitbit Sense 2, the Fitbit Charge 6.")
        return await ask(app, await new(app), "Which Fitbit do I wear every day?")
    try:
        recalled = asyncio.run(scenario())
    finally:
        app.close()
    assert ("walking", "user") in {(p.session_name, p.role) for p in recalled}, \
        [(p.session_name, p.text[:40]) for p in recalled]
