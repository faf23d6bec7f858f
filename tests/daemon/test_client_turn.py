"""`Client.turn` and `AsyncClient.turn`: one call sends a turn and returns how it ended —
its answer, or the error that ended it — and a daemon that goes away ends the wait."""

import asyncio
import threading

from ctxkeep.clients import AsyncClient, CtxkeepError
from ctxkeep.protocol.events import GenerationError, GenerationToken, ResponseGeneration

MODEL = "qwen2.5:7b"


def test_turn_returns_the_answer_and_shows_its_events(daemon, client, standin):
    standin.script("alpha beta gamma")
    sid = client.create_session(model=MODEL).session.id
    seen = []
    end = client.turn(sid, "hi", on_event=seen.append)
    assert isinstance(end, ResponseGeneration) and end.message.content == "alpha beta gamma"
    assert "".join(e.text for e in seen if isinstance(e, GenerationToken)) == "alpha beta gamma"
    assert seen[-1] is end and {e.generation_id for e in seen} == {end.generation_id}


def test_turn_returns_the_error_that_ended_it(daemon, client, standin):
    sid = client.create_session(model=MODEL).session.id
    standin.fail_next("http500")
    end = client.turn(sid, "hi")
    assert isinstance(end, GenerationError)
    assert end.code and end.message


def test_turn_of_a_daemon_that_goes_away_ends(daemon, client, standin):
    """The daemon stops while the answer is awaited: the call ends (the interrupted turn's
    error, or DaemonUnavailable once none answers) instead of waiting forever."""
    sid = client.create_session(model=MODEL).session.id
    standin.fail_next("delay", seconds=30)
    stopper = threading.Timer(0.5, daemon.stop)
    stopper.start()
    try:
        end = client.turn(sid, "hi")
    except CtxkeepError as exc:  # DaemonUnavailable among them
        assert exc.code in ("daemon_unavailable", "daemon_not_answering")
    else:
        assert isinstance(end, GenerationError)
    finally:
        stopper.join()


def test_async_turn_returns_the_answer_and_the_error(daemon, standin):
    standin.script("one two")

    async def scenario():
        async with AsyncClient(daemon.control, daemon.events) as c:
            sid = (await c.create_session(model=MODEL)).session.id
            tokens = []
            end = await c.turn(sid, "hi", on_event=lambda e: tokens.append(getattr(e, "text", "")))
            assert isinstance(end, ResponseGeneration) and end.message.content == "one two"
            standin.fail_next("http500")
            failed = await c.turn(sid, "again")
            assert isinstance(failed, GenerationError) and failed.generation_id != end.generation_id
            return tokens
    assert "one two" in "".join(asyncio.run(scenario()))


def test_async_turn_of_a_daemon_that_goes_away_ends(daemon, standin):
    standin.fail_next("delay", seconds=30)
    stopper = threading.Timer(0.5, daemon.stop)

    async def scenario():
        async with AsyncClient(daemon.control, daemon.events, timeout=2) as c:
            sid = (await c.create_session(model=MODEL)).session.id
            stopper.start()
            return await c.turn(sid, "hi", quiet=0.5)
    try:
        end = asyncio.run(scenario())
    except CtxkeepError as exc:
        assert exc.code in ("daemon_unavailable", "daemon_not_answering")
    else:
        assert isinstance(end, GenerationError)
    finally:
        stopper.join()
