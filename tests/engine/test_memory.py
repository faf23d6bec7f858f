"""Memory across sessions (issue 43) in the engine, in-process: what the user said in one
session comes back into another's prompt, with its source; private, forgotten and deleted
sessions never do."""

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.memory import block
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled
from ctxkeep.protocol.memory import MemoryForget, MemorySearch
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
SISTER = "My sister Ingrid just moved to Tromsø and started working as a glacier guide there."
QUESTION = "Where does my sister live now, and what is her job?"


async def new(app: InProcess, name: str, **settings) -> str:
    sid = (await app.call(requests.SessionCreate(name=name, model=MODEL, num_ctx=4096))).session.id
    if settings:
        await app.call(requests.SetModel(session=sid, **settings))
    return sid


async def say(app: InProcess, sid: str, text: str) -> list:
    """One turn; what its prompt recalled (the `generation.recalled` event's passages)."""
    accepted = await app.call(requests.Send(session=sid, text=text))
    await app.services.jobs.drain(30)
    return next((e.recalled for e in app.bus.seen if isinstance(e, GenerationRecalled)
                 and e.generation_id == accepted.generation_id), [])


def run(tmp_path, scenario, config: Config | None = None):
    backend = MemoryBackend(reply=lambda messages: "Noted.")
    app = InProcess(tmp_path, backend, config or Config(embed_model="", embed_builtin=False))
    try:
        return asyncio.run(scenario(app)), backend
    finally:
        app.close()


def test_what_one_session_was_told_comes_back_in_a_new_one_with_its_source(tmp_path):
    async def scenario(app):
        family = await new(app, "family")
        await say(app, family, SISTER)
        await say(app, family, "Thanks! Also, remind me to call the plumber tomorrow.")
        asked = await new(app, "new chat")
        recalled = await say(app, asked, QUESTION)
        hits = (await app.call(MemorySearch(query="sister glacier"))).hits
        message = app.store.history.page(asked)[0][-1]
        return family, recalled, hits, message
    (family, recalled, hits, message), backend = run(tmp_path, scenario)
    prompt = backend.chats[-1][0][-1]["content"]
    assert prompt.startswith(f"{QUESTION}\n\n{block.OPENING}") and SISTER in prompt and prompt.endswith("</recalled>")
    assert f'in "family" user: {SISTER}' in prompt  # where it comes from, and when (the line's stamp)
    assert (family, "family", 0) in [(p.session_id, p.session_name, p.seq) for p in recalled]
    assert {p.session_id for p in recalled} == {family}  # (with the answer it had, when there is room)
    assert (family, 0) in [(m.session_id, m.seq) for m in message.remembered]  # kept with the answer
    assert hits and (hits[0].session_id, hits[0].seq, hits[0].text) == (family, 0, SISTER)


def test_private_forgotten_and_deleted_sessions_never_come_back(tmp_path):
    async def scenario(app):
        private = await new(app, "private", memory="private")
        await say(app, private, SISTER)
        seen = [await say(app, await new(app, "a"), QUESTION)]
        other = await new(app, "other")
        await say(app, other, SISTER.replace("Ingrid", "Sigrid"))
        await app.call(MemoryForget(session=other, seqs=[0]))
        seen.append(await say(app, await new(app, "b"), QUESTION))
        await app.call(MemoryForget(session=other, seqs=[0], undo=True))
        seen.append(await say(app, await new(app, "c"), QUESTION))  # remembered again
        await app.call(MemoryForget(session=other))
        seen.append(await say(app, await new(app, "d"), QUESTION))
        await app.call(MemoryForget(session=other, undo=True))
        await app.call(requests.SessionDelete(session=other))
        seen.append(await say(app, await new(app, "e"), QUESTION))
        seen.append(await say(app, private, QUESTION + " (asked where it was said)"))
        return seen
    seen, backend = run(tmp_path, scenario)
    assert [[p.text[:9] for p in s if "sister" in p.text and "?" not in p.text] for s in seen] == \
        [[], [], ["My sister"], [], [], []]


def test_a_session_set_to_none_recalls_nothing_from_others_and_a_branch_not_its_copies(tmp_path):
    async def scenario(app):
        family = await new(app, "family")
        await say(app, family, SISTER)
        none = await say(app, await new(app, "quiet", memory="none"), QUESTION)
        branch = (await app.call(requests.Branch(session=family, at=1))).session.id
        copies = await say(app, branch, QUESTION)
        return none, copies
    (none, copies), _ = run(tmp_path, scenario)
    assert none == []
    assert all(not p.session_id for p in copies)  # its own copy may be recalled; the original never


def test_memory_off_in_config_leaves_every_session_to_itself(tmp_path):
    async def scenario(app):
        await say(app, await new(app, "family"), SISTER)
        return await say(app, await new(app, "x"), QUESTION)
    recalled, _ = run(tmp_path, scenario, Config(embed_model="", embed_builtin=False, memory="none"))
    assert recalled == []


WORDS = ["glacier", "violin", "orchard", "harbour", "lantern", "quarry", "saffron", "tundra"]


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(["all", "none", "private", "forgotten", "deleted"]), min_size=2, max_size=5))
def test_a_private_forgotten_or_deleted_sessions_words_never_reach_another_prompt(tmp_path_factory, kinds):
    tmp_path = tmp_path_factory.mktemp("memory")

    async def scenario(app):
        secrets = {}
        for n, kind in enumerate(kinds):
            word = f"{WORDS[n]}{n}secret"
            sid = await new(app, f"s{n}", **({"memory": kind} if kind in ("all", "none", "private") else {}))
            await say(app, sid, f"The codeword of the {WORDS[n]} project is {word}.")
            if kind == "forgotten":
                await app.call(MemoryForget(session=sid))
            if kind == "deleted":
                await app.call(requests.SessionDelete(session=sid))
            secrets[word] = kind
        asker = await new(app, "asker")
        for n in range(len(kinds)):
            await say(app, asker, f"What was the codeword of the {WORDS[n]} project?")
        return secrets, asker
    (secrets, asker), backend = run(tmp_path, scenario)
    prompts = [m["content"] for messages, _ in backend.chats[-len(kinds):] for m in messages]
    for word, kind in secrets.items():
        reached = any(word in p for p in prompts)
        assert reached == (kind in ("all", "none")), (word, kind)


def test_memory_follows_the_new_messages_own_words_only(tmp_path):
    """A follow-up with no words of its own ("and then?"), or whose words no other session
    holds, brings nothing from other sessions, whatever the turn before it was about."""
    async def scenario(app):
        await say(app, await new(app, "family"), SISTER)
        asker = await new(app, "asker")
        await say(app, asker, "Tell me about glaciers in general.")
        return [await say(app, asker, "And then?"), await say(app, asker, "Thanks, understood.")]
    (follow_ups), _ = run(tmp_path, scenario)
    assert [[p.session_id for p in r if p.session_id] for r in follow_ups] == [[], []]


def test_a_large_import_is_read_into_memory_off_the_event_loop(tmp_path):
    """An import of more than memory.INLINE_MESSAGES is indexed in a worker thread: turns
    meanwhile recall nothing from memory (never wait for it), and `status` says so; then it
    is there."""
    from ctxkeep.daemon.memory.memory import INLINE_MESSAGES
    from ctxkeep.protocol.imported import ImportedMessage
    said: list[str] = []  # memory's line in `status`, while it reads and after

    async def scenario(app):
        assert await app.services.memory.built(10)  # read (empty) before the import
        memory = app.services.memory
        threaded, read_in_thread = [], memory.reader._read_in_thread

        async def spied(index, owner, session):
            threaded.append(session.name)
            said.append(memory.status())
            await read_in_thread(index, owner, session)
        memory.reader._read_in_thread = spied
        filler = [ImportedMessage(role="user" if i % 2 == 0 else "assistant", content=f"note {i} about the shed")
                  for i in range(INLINE_MESSAGES + 200)]
        await app.call(requests.SessionImport(name="big", model=MODEL, messages=[
            ImportedMessage(role="user", content=SISTER), ImportedMessage(role="assistant", content="Noted."),
            *filler]))
        asker = await new(app, "asker")
        await say(app, asker, "Hello there, how are things?")  # read soon after the import, or by this turn
        assert threaded == ["big"]
        for _ in range(200):
            if not memory.mutating and not memory._tasks:
                break
            await asyncio.sleep(0.05)
        said.append(memory.status())
        return await say(app, asker, QUESTION)
    recalled, _ = run(tmp_path, scenario)
    assert SISTER in [p.text for p in recalled]
    assert "reading 1 more session (memory adds nothing until then)" in said[0]  # `status` says why
    assert "reading" not in said[-1]



def test_private_forgotten_and_deleted_words_leave_memorys_word_statistics(tmp_path):
    """A private session's words, a forgotten message's, a deleted session's, and a copy of
    one elsewhere make no word rare or common in memory's ranking: memory judges what is
    telling by the chats it may bring back; shared again, they count again."""
    async def settled(memory, want):
        for _ in range(100):
            await memory.ready()
            if memory.index.lexical.df("glacier") == want:
                break
            await asyncio.sleep(0.02)
        return memory.index.lexical.df("glacier")

    async def scenario(app):
        memory = app.services.memory
        assert await memory.built(10)
        shared, secret = await new(app, "shared"), await new(app, "secret")
        await say(app, shared, SISTER)
        await say(app, secret, "The glacier tour left at nine; the glacier was huge.")
        copy = await new(app, "copy")
        await say(app, copy, "The glacier tour left at nine; the glacier was huge.")
        await say(app, await new(app, "asker"), "Hello!")  # memory reads them all
        seen = [await settled(memory, 3)]
        await app.call(requests.SetModel(session=secret, memory="private"))
        seen.append(await settled(memory, 1))  # the private one and its copy
        await app.call(requests.SetModel(session=secret, memory="all"))
        seen.append(await settled(memory, 3))
        await app.call(MemoryForget(session=shared, seqs=[0]))
        seen.append(await settled(memory, 2))
        await app.call(MemoryForget(session=shared, seqs=[0], undo=True))
        seen.append(await settled(memory, 3))
        lexical = memory.index.lexical
        shared_again = lexical.live() == len(lexical.passages)
        await app.call(requests.SessionDelete(session=copy))  # its words are gone, copies too (as from recall)
        seen.append(await settled(memory, 1))
        return seen, shared_again, lexical.live() < len(lexical.passages)
    seen, shared_again, deleted_left = run(tmp_path, scenario)[0]
    assert seen == [3, 1, 3, 2, 3, 1] and shared_again and deleted_left


def test_a_finished_turns_messages_are_read_into_memory_before_the_next_turn(tmp_path):
    """What a turn stored is read into memory's index once the turn ends (no turn starting),
    so the next turn does not read it before its first token."""
    async def scenario(app):
        memory = app.services.memory
        assert await memory.built(10)
        told = await new(app, "told")
        await say(app, told, SISTER)
        for _ in range(100):  # read in the background: no turn, no search asks for it
            owner = memory.index.owners.get(told)
            if owner is not None and owner.next_seq == app.store.sessions.get(told).next_seq:
                return True
            await asyncio.sleep(0.02)
        return False
    read, _ = run(tmp_path, scenario)
    assert read


def test_what_memory_found_and_left_out_is_said(tmp_path):
    """Memory off for the asking session (none or private) still says what it found and
    left out, in the turn's generation.recalled and the answer's recall_cut (`show`)."""
    async def scenario(app):
        await say(app, await new(app, "family"), SISTER)
        asker = await new(app, "asker", memory="private")
        accepted = await app.call(requests.Send(session=asker, text=QUESTION))
        await app.services.jobs.drain(30)
        event = next(e for e in app.bus.seen if isinstance(e, GenerationRecalled)
                     and e.generation_id == accepted.generation_id)
        answer = app.store.history.page(asker)[0][-1]
        return event, answer
    (event, answer), backend = run(tmp_path, scenario)
    assert not event.recalled and "memory is private for this session" in event.cut and "matched" in event.cut
    assert answer.recall_cut == event.cut and SISTER not in backend.chats[-1][0][-1]["content"]


def test_a_question_naming_a_chat_logs_writer_gets_their_words_in_another_session(tmp_path):
    """Caroline's and Melanie's chat log imported into one session, each line opened with its
    writer's name; in a new chat, "How many kids does Melanie have?" says no "my" or "you said"
    but names one of its writers: memory ranks it as a question of the past and brings her line
    back (in the log's own session the same holds: speakers.about_them). An everyday request in
    the new chat gets nothing of the log."""
    from ctxkeep.protocol.imported import ImportedMessage
    kids = "Melanie: I have two kids, they keep me busy every single day."
    lines = [("Caroline", "Hey Melanie! How have you been?"), ("Melanie", "Same here, honestly."),
             ("Caroline", "I went for a run along the river this morning."), ("Melanie", kids[9:]),
             ("Caroline", "That sounds lovely!"), ("Melanie", "Thanks, Caroline, that means a lot.")]
    log = [ImportedMessage(role="user" if name == "Caroline" else "assistant", content=f"{name}: {text}")
           for _ in range(3) for name, text in lines]
    log[3] = ImportedMessage(role="assistant", content=kids)
    log[9] = log[15] = ImportedMessage(role="assistant", content="Melanie: I cooked a huge pot of chili.")

    async def scenario(app):
        await app.call(requests.SessionImport(name="chat log", model=MODEL, num_ctx=4096, messages=log))
        assert await app.services.memory.built(30)
        asked = await new(app, "new chat")
        return await say(app, asked, "How many kids does Melanie have?"), \
            await say(app, asked, "How many kids should a family car seat?")
    (named, everyday), _ = run(tmp_path, scenario)
    assert kids in [p.text for p in named], named
    assert not everyday, everyday
