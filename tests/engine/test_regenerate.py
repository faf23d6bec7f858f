"""regenerate in-process (issue 30): a new answer to the last question from the prompt the
first one had; the old answer stays in history as its alternative and leaves the active
context; a regenerate that fails puts the old exchange back; a failed turn can be retried."""

import asyncio

import pytest

from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import GenerationError, ResponseGeneration
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


def answers() -> MemoryBackend:
    """A model whose every answer differs (a counter), as a sampled one's do."""
    said = iter(range(1000))
    return MemoryBackend(reply=lambda messages: f"take {next(said)} on {messages[-1]['content'][:20]}")


def in_session(tmp_path, body) -> None:
    """`body(app, sid)` against a daemon in-process (closed after), on a new session "talk"."""
    app = InProcess(tmp_path, answers())

    async def run() -> None:
        await body(app, (await app.call(requests.SessionCreate(model=MODEL, name="talk"))).session.id)
    try:
        asyncio.run(run())
    finally:
        app.close()


async def turn(app: InProcess, sid: str, request) -> object:
    accepted = await app.call(request)
    await app.services.jobs.drain(30)
    return next(e for e in reversed(app.bus.seen) if getattr(e, "generation_id", "") == accepted.generation_id
                and isinstance(e, (ResponseGeneration, GenerationError)))


def test_a_regenerated_answer_replaces_the_last_one_which_stays_as_its_alternative(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        first = await turn(app, sid, requests.Send(session=sid, text="And a fruit?"))
        sent_first = app.backend.chats[-1][0]
        again = await turn(app, sid, requests.Regenerate(session=sid))
        assert isinstance(again, ResponseGeneration)
        assert app.backend.chats[-1][0] == sent_first  # the same prompt, the old answer not in it
        new, old = again.message, first.message
        assert (new.reply_to, new.alternative_of) == (old.reply_to, old.seq) and new.content != old.content
        context = app.store.context.get(sid).seqs
        assert context[-2:] == [old.reply_to, new.seq] and old.seq not in context
        assert app.store.history.page(sid, old.seq, 1)[0][0].content == old.content  # kept
        assert not app.store.sessions.get(sid).pending
    in_session(tmp_path, body)


def test_a_regenerate_that_fails_leaves_the_old_exchange_where_it_was(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        first = await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        before = app.store.context.get(sid).seqs
        app.backend.fail_at(1, ModelCallError(ErrorCode.STREAM_INTERRUPTED, "cut"))
        failed = await turn(app, sid, requests.Regenerate(session=sid))
        assert isinstance(failed, GenerationError) and failed.code == "stream_interrupted"
        assert app.store.context.get(sid).seqs == before
        partial = app.store.history.page(sid, failed.stored_seq, 1)[0][0]
        assert (partial.status, partial.alternative_of) == ("interrupted", first.message.seq)
        assert not app.store.sessions.get(sid).pending
    in_session(tmp_path, body)


def test_a_failed_turn_is_retried_and_joins_the_context(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        app.backend.fail_at(0, ModelCallError(ErrorCode.OLLAMA_UNREACHABLE, "down"))
        failed = await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        assert isinstance(failed, GenerationError) and app.store.context.get(sid).seqs == []
        retried = await turn(app, sid, requests.Regenerate(session=sid))
        assert isinstance(retried, ResponseGeneration)
        assert app.store.context.get(sid).seqs == [retried.message.reply_to, retried.message.seq]
    in_session(tmp_path, body)


def test_nothing_to_regenerate_and_a_busy_session_are_refused(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        with pytest.raises(RequestError, match="nothing to regenerate"):
            await app.call(requests.Regenerate(session=sid))
        await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        app.backend.hold()
        await app.call(requests.Send(session=sid, text="And a fruit?"))
        await app.backend.parked.wait()
        with pytest.raises(RequestError) as busy:
            await app.call(requests.Regenerate(session=sid))
        assert busy.value.code is ErrorCode.BUSY
        app.backend.release()
        await app.services.jobs.drain(30)
    in_session(tmp_path, body)


def test_editing_the_last_question_asks_it_in_place(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        first = await turn(app, sid, requests.Send(session=sid, text="And a fruit?"))
        question = first.message.reply_to
        edited = await turn(app, sid, requests.Edit(session=sid, seq=question, text="And a vegetable?"))
        assert isinstance(edited, ResponseGeneration)
        assert app.backend.chats[-1][0][-1]["content"] == "And a vegetable?"
        assert "And a fruit?" not in str(app.backend.chats[-1][0])  # the old exchange is not sent
        new_question = app.store.history.page(sid, edited.message.reply_to, 1)[0][0]
        assert (new_question.content, new_question.alternative_of) == ("And a vegetable?", question)
        assert edited.message.alternative_of == first.message.seq
        assert app.store.context.get(sid).seqs[-2:] == [new_question.seq, edited.message.seq]
        again = await turn(app, sid, requests.Edit(session=sid, text="And a nut?"))  # no seq: the last
        assert app.store.history.messages(sid, [again.message.reply_to])[0].alternative_of == new_question.seq
    in_session(tmp_path, body)


def test_editing_an_earlier_question_asks_it_in_a_branch(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        await turn(app, sid, requests.Send(session=sid, text="And a fruit?"))
        before = app.store.history.page(sid, 0, 100)[0]
        accepted = await app.call(requests.Edit(session=sid, seq=0, text="Name a city"))
        await app.services.jobs.drain(30)
        assert accepted.session_id != sid and "talk" in accepted.warnings[0]
        branch = app.store.sessions.get(accepted.session_id)
        assert (branch.branched_from, branch.branched_at) == (sid, -1)
        assert [m.content for m in app.store.history.page(branch.id, 0, 100)[0]][0] == "Name a city"
        assert app.store.history.page(sid, 0, 100)[0] == before  # the session is unchanged
        with pytest.raises(RequestError, match="not one of your questions"):
            await app.call(requests.Edit(session=sid, seq=1, text="x"))
    in_session(tmp_path, body)


def test_an_answer_a_regenerate_replaced_can_be_put_back_and_regenerated_from(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        first = (await turn(app, sid, requests.Send(session=sid, text="Name a colour"))).message
        second = (await turn(app, sid, requests.Regenerate(session=sid))).message
        info = (await app.call(requests.Alternative(session=sid, seq=first.seq))).session
        assert app.store.context.get(sid).seqs == [first.reply_to, first.seq]
        assert not info.token_count_exact  # an estimate until the next turn
        with pytest.raises(RequestError, match="not an answer to the last question"):
            await app.call(requests.Alternative(session=sid, seq=first.reply_to))
        third = (await turn(app, sid, requests.Regenerate(session=sid))).message
        assert third.alternative_of == first.seq  # the one the model saw, put back
        await app.call(requests.Alternative(session=sid, seq=second.seq))
        assert app.store.context.get(sid).seqs == [first.reply_to, second.seq]
    in_session(tmp_path, body)


def test_a_regenerate_after_a_compaction_keeps_the_summary_and_replaces_the_last_answer(tmp_path):
    async def body(app: InProcess, sid: str) -> None:
        for i in range(4):
            last = await turn(app, sid, requests.Send(session=sid, text=f"question {i} " + "word " * 80))
        await app.call(requests.Compact(session=sid, tail_turns=1))
        await app.services.jobs.drain(30)
        before = app.store.context.get(sid).seqs
        assert before[-2:] == [last.message.reply_to, last.message.seq] and len(before) < 8
        again = await turn(app, sid, requests.Regenerate(session=sid))
        assert app.store.context.get(sid).seqs == [*before[:-1], again.message.seq]
        summary = app.store.history.page(sid, before[0], 1)[0][0]
        sent = [m["content"] for m in app.backend.chats[-1][0]]
        assert summary.kind == "summary" and any(summary.content in text for text in sent)
    in_session(tmp_path, body)
