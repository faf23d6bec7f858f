"""When memory reads a session again (in-process): only when what it reads of the session
may have changed; what changed still reaches the next turn."""

import asyncio

from test_memory import QUESTION, SISTER, new, run, say

from ctxkeep.daemon.store.shown import session_info
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import ContextUsage, GenerationToken, SessionUpdated
from ctxkeep.protocol.memory import MemoryForget
from ctxkeep.protocol.structs import Usage


def spy_on_reading(app) -> list[tuple[str, int]]:
    """(session id, prompts sent so far) of every session memory looks at again."""
    memory, read = app.services.memory, []
    catch_up = memory.reader.catch_up

    def noted(index, owner, session, inline):
        read.append((session.id, len(app.backend.chats)))
        return catch_up(index, owner, session, inline)
    memory.reader.catch_up = noted
    return read


def test_an_update_that_changes_nothing_memory_reads_is_not_read_again(tmp_path):
    async def scenario(app):
        memory = app.services.memory
        assert await memory.built(10)
        family = await new(app, "family")
        await say(app, family, SISTER)
        await memory.ready()
        read = spy_on_reading(app)
        record = app.store.sessions.get(family)
        for event in (SessionUpdated(session=session_info(record, busy=True)),  # busy, counts, usage, text:
                      ContextUsage(usage=Usage(tokens=1, window=4096, fill=0.0, exact=True)),  # nothing memory reads
                      GenerationToken(generation_id="g", index=0, text="Noted.")):
            app.bus.publish(event, family)
        await memory.ready()
        unchanged = list(read)
        await app.call(requests.SessionRename(session=family, name="my family"))
        await memory.ready()
        renamed = list(read)
        recalled = await say(app, await new(app, "asked"), QUESTION)
        await memory.ready()
        del read[:]
        await app.call(MemoryForget(session=family, seqs=[0]))
        await memory.ready()
        forgotten = list(read)
        return family, unchanged, renamed, recalled, forgotten, await say(app, await new(app, "again"), QUESTION)
    (family, unchanged, renamed, recalled, forgotten, after), _ = run(tmp_path, scenario)
    assert unchanged == []
    assert [sid for sid, _ in renamed] == [family] and [sid for sid, _ in forgotten] == [family]
    assert {(p.session_id, p.session_name) for p in recalled} == {(family, "my family")}  # the new name
    assert SISTER not in [p.text for p in after]  # the forgetting was read


def test_a_forgetting_taken_back_is_remembered_by_the_very_next_turn(tmp_path):
    """Forgotten, read, then remembered again: the next turn brings it back (the word
    statistics count its words again before that turn ranks, not in a task some time after)."""
    async def scenario(app):
        memory = app.services.memory
        assert await memory.built(10)
        family = await new(app, "family")
        await say(app, family, SISTER)
        await app.call(MemoryForget(session=family, seqs=[0]))
        await memory.ready()
        await app.call(MemoryForget(session=family, seqs=[0], undo=True))
        return family, await say(app, await new(app, "asked"), QUESTION)
    (family, recalled), _ = run(tmp_path, scenario)
    assert (family, SISTER) in [(p.session_id, p.text) for p in recalled]


def test_a_new_session_is_read_before_its_first_turn_not_by_it(tmp_path):
    """A session made is read into memory in the background (no turn starting), so its first
    turn does not read it before its first token."""
    async def scenario(app):
        memory = app.services.memory
        assert await memory.built(10)
        read = spy_on_reading(app)
        made = await new(app, "made")
        for _ in range(100):  # read in the background: no turn, no search asks for it
            if (made, 0) in read:
                break
            await asyncio.sleep(0.02)
        before = list(read)
        await say(app, made, QUESTION)
        return made, before, read
    (made, before, read), _ = run(tmp_path, scenario)
    assert before == [(made, 0)]
    assert read.count((made, 0)) == 1  # its turn did not read it again before its prompt
