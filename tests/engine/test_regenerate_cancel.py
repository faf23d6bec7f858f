"""regenerate, edit and alternative against a session at work (issue 30): refused busy
while a compaction runs, and a cancel at each step of a regenerate or an edit — before
the model starts, while it streams — puts the old exchange back, every job with one
terminal event and the history append-only."""

import asyncio

import pytest
from test_regenerate import in_session, turn

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import CompactionResult, GenerationError, GenerationToken


def history(app, sid: str) -> list[tuple[int, str]]:
    return [(m.seq, m.content) for m in app.store.history.page(sid, 0, 1000)[0]]


def terminals(app, generation_id: str) -> list[object]:
    return [e for e in app.bus.seen if getattr(e, "generation_id", "") == generation_id
            and type(e).__name__ in ("ResponseGeneration", "GenerationError")]


@pytest.mark.parametrize("request_of", [
    lambda sid, q: requests.Regenerate(session=sid),
    lambda sid, q: requests.Edit(session=sid, seq=q, text="Reworded"),
    lambda sid, q: requests.Alternative(session=sid, seq=q + 1),
], ids=["regenerate", "edit", "alternative"])
def test_while_a_compaction_runs_the_last_exchange_cannot_change(tmp_path, request_of):
    async def body(app, sid: str) -> None:
        for i in range(4):
            last = await turn(app, sid, requests.Send(session=sid, text=f"question {i} " + "word " * 80))
        app.backend.hold()  # the summary's model call waits
        await app.call(requests.Compact(session=sid, tail_turns=1))
        await app.backend.parked.wait()
        with pytest.raises(RequestError) as busy:
            await app.call(request_of(sid, last.message.reply_to))
        assert busy.value.code is ErrorCode.BUSY and "compaction" in str(busy.value)
        app.backend.release()
        await app.services.jobs.drain(30)
        assert [e.status for e in app.bus.seen if isinstance(e, CompactionResult)] == ["ok"]
        after = app.store.context.get(sid).seqs
        assert after[-2:] == [last.message.reply_to, last.message.seq]  # as the compaction left it
        again = await turn(app, sid, requests.Regenerate(session=sid))  # and after it, it can
        assert app.store.context.get(sid).seqs == [*after[:-1], again.message.seq]
    in_session(tmp_path, body)


@pytest.mark.parametrize("step", ["before the model answers", "while it streams"])
@pytest.mark.parametrize("kind", ["regenerate", "edit"])
def test_a_cancelled_regenerate_or_edit_puts_the_old_exchange_back(tmp_path, kind, step):
    async def body(app, sid: str) -> None:
        first = await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        before, stored = app.store.context.get(sid).seqs, history(app, sid)
        app.backend.hold()
        asked = (requests.Regenerate(session=sid) if kind == "regenerate" else
                 requests.Edit(session=sid, seq=first.message.reply_to, text="Name a fruit"))
        accepted = await app.call(asked)
        await app.backend.parked.wait()
        if step == "while it streams":
            app.backend.release()
            while not any(isinstance(e, GenerationToken) and e.generation_id == accepted.generation_id
                          for e in app.bus.seen):
                await asyncio.sleep(0)
        await app.call(requests.Cancel(session=sid))
        app.backend.release()
        await app.services.jobs.drain(30)
        ended = terminals(app, accepted.generation_id)
        assert len(ended) == 1 and isinstance(ended[0], GenerationError) and ended[0].code == "cancelled"
        assert app.store.context.get(sid).seqs == before  # the old exchange is what the model sees
        now = history(app, sid)
        assert now[:len(stored)] == stored  # append-only: the edited question stays, unseen
        assert not app.store.sessions.get(sid).pending and not app.services.jobs.busy(sid)
        again = await turn(app, sid, requests.Regenerate(session=sid))  # /retry: asked again
        asked = again.message.reply_to if kind == "edit" else first.message.reply_to
        assert app.store.context.get(sid).seqs == [asked, again.message.seq]
        if kind == "edit":  # the reworded question, in place of the one it rewords
            assert app.store.history.messages(sid, [asked])[0].content == "Name a fruit"
            assert app.backend.chats[-1][0][-1]["content"] == "Name a fruit"
    in_session(tmp_path, body)


def test_a_cancelled_edit_of_an_earlier_question_leaves_its_branch_with_the_question(tmp_path):
    async def body(app, sid: str) -> None:
        await turn(app, sid, requests.Send(session=sid, text="Name a colour"))
        await turn(app, sid, requests.Send(session=sid, text="And a fruit?"))
        stored = history(app, sid)
        app.backend.hold()
        accepted = await app.call(requests.Edit(session=sid, seq=0, text="Name a city"))
        await app.backend.parked.wait()
        await app.call(requests.Cancel(session=accepted.session_id))
        app.backend.release()
        await app.services.jobs.drain(30)
        assert [e.code for e in terminals(app, accepted.generation_id)] == ["cancelled"]
        assert history(app, sid) == stored  # the source is untouched
        branch = history(app, accepted.session_id)
        assert branch[0][1] == "Name a city" and not app.services.jobs.busy(accepted.session_id)
    in_session(tmp_path, body)
