"""Recall (issue 27) in the engine, in-process: the passages of a session's whole history
that a new message needs, brought into its prompt (selection alone: unit/test_recall_selection.py;
through the daemon: daemon/test_recall_daemon.py)."""

import asyncio
import random

from chatter import FACT, FILLER, filler_reply
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.retrieval import select
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


async def _talk(app: InProcess, sid: str, texts: list[str]) -> list[list]:
    """Each turn's recalled passages (none: [])."""
    out = []
    for text in texts:
        accepted = await app.call(requests.Send(session=sid, text=text))
        await app.services.jobs.drain(30)
        out.append(next((e.recalled for e in app.bus.seen if isinstance(e, GenerationRecalled)
                         and e.generation_id == accepted.generation_id), []))
    return out



def last_prompt(backend: MemoryBackend) -> list[dict]:
    """The last turn's prompt (a pass after it may have asked for summaries since)."""
    return next(m for m, _ in reversed(backend.chats)
                if not m[-1]["content"].startswith(("Conversation to", "Summary to", "Summaries of")))

def test_a_fact_gone_from_the_context_comes_back_for_a_question_about_it_only(tmp_path):
    rng = random.Random(3)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))  # by words alone

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        await _talk(app, sid, [FACT] + [" ".join(rng.choice(FILLER) for _ in range(25)) for _ in range(40)])
        assert 0 not in app.store.context.get(sid).seqs  # the fact left the active context
        asked = (await _talk(app, sid, ["Where does Alice live these days?"]))[-1]
        prompt = last_prompt(backend)
        unrelated = (await _talk(app, sid, ["What is the capital city of France, do you know?"]))[-1]
        return asked, prompt, unrelated
    asked, prompt, unrelated = asyncio.run(go())
    app.close()
    text = "\n".join(m["content"] for m in prompt)
    assert text.count(FACT) == 1  # once: in a checkpoint that kept it (fact_check), or recalled
    last = prompt[-1]["content"]
    if 0 in [p.seq for p in asked]:
        assert last.startswith(f"Where does Alice live these days?\n\n{select.OPENING}") and FACT in last
        assert last.endswith(select.CLOSING)  # after the question: the next turn, sending the question alone, reads it from the cache
    else:
        assert FACT in prompt[0]["content"]  # the checkpoint kept the user's fact word for word
    assert 0 not in [p.seq for p in unrelated]


def test_recall_never_makes_a_prompt_compact_or_not_fit(tmp_path):
    """In a small window with a long history, every prompt leaves its reply room (the
    in-memory backend refuses any over the window) and recall adds to none that is full."""
    rng = random.Random(4)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        texts = [f"Fact {i}: Person{i} keeps a {rng.choice(FILLER)} collection." for i in range(10)]
        texts += [" ".join(rng.choice(FILLER) for _ in range(20)) for _ in range(30)]
        texts += [f"What does Person{i} collect?" for i in range(10)]
        return await _talk(app, sid, texts)
    received = asyncio.run(go())
    app.close()
    assert not [e for e in app.bus.seen if type(e).__name__ == "GenerationError"]
    turns = [options for messages, options in backend.chats
             if not messages[-1]["content"].startswith(("Conversation to", "Summary to", "Summaries of"))]
    assert turns and all(options["num_predict"] >= 128 for options in turns)  # the reply room (1024 // 8)
    assert any(received[-10:])


def test_a_question_about_the_users_own_fact_recalls_their_words_over_the_models_wrong_echoes(tmp_path):
    """A small model restates what it was told, wrongly, in answer after answer: the user's
    own statement is what a question about "my" locker code brings back."""
    rng = random.Random(6)

    def echo(messages: list[dict]) -> str:
        if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            return "Summary: they chatted."
        return f"My locker code is {rng.randint(4700, 4799)}-green, my locker code. " + filler_reply(messages)[:60]
    backend = MemoryBackend(reply=echo)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))
    said = "Please remember this: my locker code is 4711-blue."

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        await _talk(app, sid, [said] + [" ".join(rng.choice(FILLER) for _ in range(30)) for _ in range(24)])
        assert 0 not in app.store.context.get(sid).seqs  # the fact left the active context
        return (await _talk(app, sid, ["What is my locker code?"]))[-1]
    recalled = asyncio.run(go())
    app.close()
    prompt = "\n".join(m["content"] for m in last_prompt(backend))
    # the user's own words: recalled, or kept word for word by a checkpoint (which takes its
    # facts from what the user stated, not from the model's restatements)
    assert 0 in [p.seq for p in recalled] or said in prompt, [p.text[:40] for p in recalled]


async def _imported(app: InProcess, messages: list[dict], window: int) -> str:
    """A session holding `messages` (imported), compacted to its window by one turn."""
    from ctxkeep.protocol.imported import ImportedMessage
    reply = await app.call(requests.SessionImport(model=MODEL, num_ctx=window,
                                                  messages=[ImportedMessage(**m) for m in messages]))
    return reply.session.id


def _chatter(rng: random.Random, n: int, names: tuple[str, str] = ("", "")) -> list[dict]:
    out = []
    for i in range(n):
        said = " ".join(rng.choice(FILLER) for _ in range(30))
        name = names[i % 2]
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"{name}: {said}" if name else said})
    return out


def test_a_fact_inside_a_long_answer_comes_back_with_the_whole_answer(tmp_path):
    """The answer that holds what a question asks about returns whole, not as a passage cut
    out of it: the words around the fact come with it."""
    rng = random.Random(5)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))
    long_answer = ("Here is a plan for your garden. " + " ".join(rng.choice(FILLER) for _ in range(120)) +
                   " For the tomatoes I suggest the Black Krim variety, planted in late April. " +
                   " ".join(rng.choice(FILLER) for _ in range(120)))

    async def go():
        sid = await _imported(app, [{"role": "user", "content": "Can you plan my garden?"},
                                    {"role": "assistant", "content": long_answer}, *_chatter(rng, 80)], 4096)
        await _talk(app, sid, ["Which tomato variety did you suggest for my garden?"])
        return last_prompt(backend)[-1]["content"]
    last = asyncio.run(go())
    app.close()
    assert long_answer.strip() in last


def test_in_a_two_person_chat_the_names_in_every_turn_do_not_drown_the_fact(tmp_path):
    """Both speakers' names open every message (as in chat logs): they carry nothing, and a
    question naming one of them still finds the turn that says what it asks."""
    fact = "Caroline: I finally adopted a rescue greyhound last weekend, his name is Biscuit."
    prompt = _asked_of_a_chat_log(tmp_path, 6, {"role": "user", "content": fact}, 20,
                                  "Melanie: What kind of dog did Caroline adopt?")
    assert fact in prompt[-1]["content"] or fact in prompt[0]["content"]  # recalled, or kept by its checkpoint


def _asked_of_a_chat_log(tmp_path, seed: int, said: dict, at: int, question: str,
                         labeled: bool = True) -> list[dict]:
    """The prompt of `question`, asked of Caroline's and Melanie's imported chat log (100
    lines, each opened with its writer's name, or not `labeled`: then every fifth greets the
    other by name) with `said` in place of its line `at`."""
    rng = random.Random(seed)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))  # by words alone
    names = ("Caroline", "Melanie") if labeled else ("", "")
    turns = _chatter(rng, 100, names)
    if not labeled:
        for i in range(0, 100, 5):
            turns[i]["content"] = f"Thanks, {('Melanie', 'Caroline')[i % 2]}, " + turns[i]["content"]
    turns[at] = said

    async def go():
        sid = await _imported(app, turns, 4096)
        await _talk(app, sid, [question])
        return last_prompt(backend)
    try:
        return asyncio.run(go())
    finally:
        app.close()


def test_a_question_stamped_with_its_date_finds_the_fact_not_every_stamped_message(tmp_path):
    """Chat front-ends open messages with a time stamp; a question's own stamp must not
    recall every other stamped message in place of what it asks about."""
    rng = random.Random(7)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))
    fact = "I got my guitar serviced at Strings and Things on Elm Street."
    turns = []
    for day in range(1, 29):
        turns += [{"role": "user", "content": f"[2023/05/{day:02d} (Tue) 10:{day:02d}] " +
                   " ".join(rng.choice(FILLER) for _ in range(25))},
                  {"role": "assistant", "content": " ".join(rng.choice(FILLER) for _ in range(25))}]
    turns.insert(30, {"role": "user", "content": fact})
    turns.insert(31, {"role": "assistant", "content": "Good to know."})

    async def go():
        sid = await _imported(app, turns, 2048)
        await _talk(app, sid, ["[2023/06/24 (Sat) 09:01] Where did I get my guitar serviced?"])
        return last_prompt(backend)[-1]["content"]
    last = asyncio.run(go())
    app.close()
    assert fact in last


def test_recall_brings_what_is_about_the_message_not_every_passage_that_shares_a_word(tmp_path):
    """Forty turns that each say "move" in passing, and one that says where Alice moved: the
    question about her gets the fact, not the room filled with every other "move" (each far
    below the best match: select.FLOOR), though the room is there."""
    rng = random.Random(5)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))  # by words alone

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        chatter = [f"We move on to the {' and the '.join(rng.sample(FILLER, 3))} now." for _ in range(40)]
        await _talk(app, sid, [FACT, *chatter])
        assert 0 not in app.store.context.get(sid).seqs  # the fact left the active context
        return (await _talk(app, sid, ["Where did my sister Alice move to?"]))[-1]
    recalled = asyncio.run(go())
    app.close()
    assert 0 in [p.seq for p in recalled] or FACT in last_prompt(backend)[0]["content"]  # recalled, or kept by its checkpoint
    assert not [p.text for p in recalled if p.text.startswith("We move on")]


def test_a_question_needing_two_facts_gets_both_though_it_speaks_of_no_ones_past(tmp_path):
    """"The person who took in the poodle — which city are they in?" says no "my" or "you said",
    so recall keeps only what is about it; the turn its second hop finds through the name the
    first found ("Leona, my neighbour, lives in Bologna") is about it too. An everyday request
    still gets nothing."""
    rng = random.Random(8)
    backend = MemoryBackend(reply=filler_reply)
    app = InProcess(tmp_path, backend, Config(embed_model="", embed_builtin=False))  # by words alone
    people = [("Leona", "a poodle", "Bologna"), ("Mateo", "a greyhound", "Tallinn"),
              ("Selma", "two cats", "Kraków"), ("Greta", "a dachshund", "Porto")]
    facts = [f"By the way, {name} adopted {pet} from the shelter." for name, pet, _ in people[:2]] + \
            [f"By the way, {name}, my neighbour, lives in {city}." for name, _, city in people]
    rng.shuffle(facts)
    # said by the other speaker of a two-person chat: not kept whole in a checkpoint as the user's own words
    turns = [m for fact in facts for m in [{"role": "user", "content": "Any news?"},
                                           {"role": "assistant", "content": fact}, *_chatter(rng, 12)]]

    async def go():
        sid = await _imported(app, turns + _chatter(rng, 20), 2048)
        await _talk(app, sid, ["The person who took in a poodle from the shelter — which city are they in?"])
        prompt = "\n".join(m["content"] for m in last_prompt(backend))
        return prompt, (await _talk(app, sid, ["What is the capital city of France, do you know?"]))[-1]
    prompt, everyday = asyncio.run(go())
    app.close()
    assert "Leona adopted a poodle from the shelter." in prompt and "Leona, my neighbour, lives in Bologna." in prompt
    assert everyday == []


def test_in_a_chat_log_a_question_from_outside_about_one_writer_gets_what_they_said(tmp_path):
    """A two-person chat log, each line opened with its writer's name, and a question asked of
    it from outside in the third person: "Where does Melanie live these days?" says no "my" or
    "you said", and "Melanie" is in every line she wrote; it still gets her own words (the other
    side's: a checkpoint does not keep them whole, as it keeps the user's)."""
    fact = "Melanie: I live in Tallinn now, we like how quiet it is."
    prompt = _asked_of_a_chat_log(tmp_path, 9, {"role": "assistant", "content": fact}, 21,
                                  "Where does Melanie live these days?")
    assert fact in "\n".join(m["content"] for m in prompt)


def test_in_a_chat_log_without_names_a_question_naming_one_writer_gets_what_they_said(tmp_path):
    """The same chat replayed with each writer as a role, no line opened with a name: the
    names are only where one thanks the other ("Thanks, Melanie, ..."). "Where does Melanie
    live these days?" asks of the assistant's side of the chat (speakers.addressees), not
    of the lines that hold her name."""
    fact = "I live in Tallinn now, we like how quiet it is."
    prompt = _asked_of_a_chat_log(tmp_path, 9, {"role": "assistant", "content": fact}, 21,
                                  "Where does Melanie live these days?", labeled=False)
    assert fact in "\n".join(m["content"] for m in prompt)


def test_in_a_chat_log_an_everyday_request_from_outside_gets_nothing_of_it(tmp_path):
    """A message from outside a chat log asks about it only where it speaks of its two people
    (names either, or "the one of them who …"): an everyday request written beside it ("What
    is the capital city of Canada?") gets nothing of a line that shares a word with it,
    as in any other session (gate.py)."""
    line = "Melanie: The tax office in the city stays open late on Thursdays."
    prompt = _asked_of_a_chat_log(tmp_path, 9, {"role": "assistant", "content": line}, 21,
                                  "What is the capital city of Canada?")
    assert select.OPENING not in prompt[-1]["content"], prompt[-1]["content"]
    assert line not in "\n".join(m["content"] for m in prompt[1:])
