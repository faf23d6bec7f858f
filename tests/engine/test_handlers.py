"""Request handlers in-process (tests/inprocess.py): the real store, the real services,
the in-memory model backend, no sockets. What the control loop would answer comes from
`HANDLERS` and the daemon's own error mapping."""

import asyncio

import pytest

from ctxkeep.daemon.config import load
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.errors import StoreError
from ctxkeep.daemon.store.store import NoSuchSnapshot, UnknownSession
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import (
    ContextUsage,
    GenerationError,
    ResponseGeneration,
    SessionCreated,
    SessionUpdated,
)
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


@pytest.fixture
def app(tmp_path):
    made = InProcess(tmp_path, MemoryBackend())
    yield made
    made.close()


def run(coro):
    return asyncio.run(coro)


def test_create_announces_the_session_and_its_usage(app):
    reply = run(app.call(requests.SessionCreate(name="plan", model=MODEL)))
    assert reply.session.name == "plan" and reply.session.token_count > 0
    (created,) = app.of_type(SessionCreated)
    (usage,) = app.of_type(ContextUsage)
    assert created.session_id == usage.session_id == reply.session.id


def test_a_session_is_resolved_once_by_id_prefix_or_name(app):
    sid = run(app.call(requests.SessionCreate(name="plan", model=MODEL))).session.id
    for ref in (sid, sid[:6], "plan"):
        assert run(app.call(requests.SessionGet(session=ref))).session.id == sid
    with pytest.raises(UnknownSession):
        run(app.call(requests.SessionGet(session="nope")))


def test_a_prompt_change_records_a_fresh_estimate(app):
    sid = run(app.call(requests.SessionCreate(model=MODEL))).session.id
    before = app.store.sessions.get(sid).count.tokens
    reply = run(app.call(requests.SetSystem(session=sid, system="Answer in French. " * 40)))
    assert reply.session.token_count > before and not reply.session.token_count_exact
    assert app.of_type(SessionUpdated)[-1].session.token_count == reply.session.token_count


def test_bad_arguments_are_request_errors(app):
    sid = run(app.call(requests.SessionCreate(model=MODEL))).session.id
    with pytest.raises(RequestError) as caught:
        run(app.call(requests.SessionRename(session=sid, name="𝔁" * 70)))
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(NoSuchSnapshot) as snapshot:
        run(app.call(requests.SnapshotRestore(session=sid, snapshot_id="-1")))
    assert snapshot.value.code == ErrorCode.INVALID_ARGUMENT


def test_a_send_is_stored_before_it_is_accepted_and_ends_once(app, monkeypatch):
    busy_with: list[list[str]] = []  # the stored history each time the session became busy
    publish = app.bus.publish

    def noting(event, session_id=""):
        if isinstance(event, SessionUpdated) and event.session.busy:
            busy_with.append([m.content for m in app.store.history.page(event.session.id)[0]])
        return publish(event, session_id)
    monkeypatch.setattr(app.bus, "publish", noting)

    async def turn():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        accepted = await app.call(requests.Send(session=sid, text="hello there"))
        stored = app.store.history.page(sid)[0]
        assert [m.content for m in stored] == ["hello there"]  # before the job has run
        await app.services.jobs.drain(30)
        return sid, accepted
    sid, accepted = run(turn())
    ends = [e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))
            and e.generation_id == accepted.generation_id]
    assert len(ends) == 1 and isinstance(ends[0], ResponseGeneration)
    assert busy_with[0] == ["hello there"]  # busy once accepted, that is once stored
    busy = [e.session.busy for e in app.of_type(SessionUpdated) if e.session.id == sid]
    assert busy[-1] is False and busy.index(True) < app.bus.seen.index(ends[0])
    assert [m.role for m in app.store.history.page(sid)[0]] == ["user", "assistant"]
    assert app.store.sessions.get(sid).count.exact


def test_a_question_is_committed_once_its_model_request_is_out(app, monkeypatch):
    """A turn that starts at once sends its request first, then stores its question; a
    queued one's question is stored at once; `accepted` still waits for the commit."""
    requests_out: list[int] = []  # model requests made when each question's commit started
    append = app.store.history.append_async

    def noting(session_id, messages, **how):
        if how.get("pending"):
            requests_out.append(len(app.backend.chats))
        return append(session_id, messages, **how)
    monkeypatch.setattr(app.store.history, "append_async", noting)

    async def turns():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        app.backend.hold()  # the first answer waits: the second question queues behind it
        first = await app.call(requests.Send(session=sid, text="first question"))
        second = await app.call(requests.Send(session=sid, text="second question"))
        assert [m.content for m in app.store.history.page(sid)[0]] == ["first question", "second question"]
        app.backend.release()
        await app.services.jobs.drain(30)
        return first, second
    first, second = run(turns())
    assert (first.ahead, second.ahead) == (0, 1)
    assert requests_out == [1, 1]  # the first after its request was out; the queued one at once


def test_a_question_that_cannot_be_stored_ends_its_turn_while_the_model_is_still_silent(app, monkeypatch):
    """The question's commit fails (a full disk) while the model has sent nothing yet: the
    send is answered with the error, and the turn ends without waiting for the model's first
    token, and without an event (no client was told of it)."""
    async def full(session_id, messages, **how):
        raise StoreError("MDB_MAP_FULL: the disk is full")
    monkeypatch.setattr(app.store.history, "append_async", full)

    async def turn() -> tuple[str, bool]:
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        app.backend.hold()  # the model sends nothing until released
        with pytest.raises(StoreError):
            await asyncio.wait_for(app.call(requests.Send(session=sid, text="hello")), 10)
        ended = await app.services.jobs.idle(sid, 5)  # while the model is still held
        app.backend.release()
        return sid, ended
    sid, ended = run(turn())
    assert ended
    assert not [e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))]
    assert app.store.history.page(sid)[0] == []


class Unsendable(MemoryBackend):
    """A model call whose request never leaves (a connect that hangs)."""

    async def stream_chat(self, model, messages, options, extras, on_sent=None):
        await asyncio.Event().wait()
        yield  # pragma: no cover - never reached


def test_a_question_is_stored_and_accepted_even_when_its_request_never_leaves(tmp_path):
    app = InProcess(tmp_path, Unsendable())

    async def turn():
        sid = (await app.call(requests.SessionCreate(model=MODEL))).session.id
        accepted = await asyncio.wait_for(app.call(requests.Send(session=sid, text="anyone?")), 10)
        assert [m.content for m in app.store.history.page(sid)[0]] == ["anyone?"]
        await app.call(requests.Cancel(session=sid))
        await app.services.jobs.drain(10)
        return accepted
    try:
        accepted = run(turn())
        ends = [e for e in app.bus.seen if isinstance(e, (ResponseGeneration, GenerationError))]
        assert [(type(e), e.generation_id) for e in ends] == [(GenerationError, accepted.generation_id)]
    finally:
        app.close()


def test_models_default_is_checked_written_to_the_config_and_used(app, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('# mine\nnum_ctx = 4096   # small machine\n\n[default_options]\ntemperature = 0.2\n')
    with pytest.raises(RequestError) as refused:
        run(app.call(requests.ModelsDefault(model="nosuch:1b")))
    assert refused.value.code == ErrorCode.MODEL_NOT_FOUND and MODEL in refused.value.message
    assert "default_model" not in config.read_text()  # refused: nothing written
    reply = run(app.call(requests.ModelsDefault(model=MODEL)))
    assert reply.model == MODEL and reply.config_path == str(config)
    assert config.read_text() == ('# mine\nnum_ctx = 4096   # small machine\ndefault_model = "qwen2.5:7b"\n\n'
                                  '[default_options]\ntemperature = 0.2\n')
    assert run(app.call(requests.SessionCreate())).session.model == MODEL  # used at once
    run(app.call(requests.ModelsDefault(model="later:3b", force=True)))
    assert config.read_text().count("default_model") == 1 and 'default_model = "later:3b"' in config.read_text()
    assert load(config).default_model == "later:3b" and load(config).default_options == {"temperature": 0.2}


def test_models_default_leaves_a_config_that_does_not_load_alone(app, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("num_ctx = 'many'\n")
    with pytest.raises(RequestError) as refused:
        run(app.call(requests.ModelsDefault(model=MODEL)))
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT and "num_ctx" in refused.value.message
    assert config.read_text() == "num_ctx = 'many'\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".config")] == []
