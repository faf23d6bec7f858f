"""Acknowledged means durable: SIGKILLs at random points lose nothing (a bounded run: each
way of dying twice here, 40 kills in the long run; bench/crash.py is the soak)."""

import os

import pytest

import crash


@pytest.mark.early
@pytest.mark.parametrize("kills", [
    int(os.environ.get("CTXKEEP_CRASH_KILLS", str(2 * len(crash.MODES)))),
    pytest.param(40, marks=pytest.mark.long),  # the long run's: more kills, another seed
])
def test_kills_at_random_points_lose_no_acknowledged_question(daemon_factory, standin, kills):
    report = crash.run(daemon_factory(), standin, kills=kills, seed=3 if kills < 40 else 11)
    assert report.kills == kills and report.restarts_failed == 0
    assert report.acknowledged >= kills
    assert report.lost == []
    assert report.unanswered == []
    assert report.invariant_failures == []
    assert set(report.by_mode) == set(crash.MODES)


def test_after_a_kill_mid_answer_a_stateless_client_keeps_what_it_saw_and_retries_in_place(daemon_factory, standin):
    """SIGKILL while an HTTP client reads an answer: the answer streamed so far is kept (as
    the interrupted answer), and the client's retry of the same request continues the same
    session (asked again there), not a new one."""
    import signal
    import time

    import ollama

    from conftest import free_port
    port = free_port()
    daemon = daemon_factory()
    daemon.write_config(f'http_listen = "127.0.0.1:{port}"\nhttp_auth = "none"\n')
    daemon.start()
    standin.chunk_delay = 0.05
    standin.script(" ".join(f"word{i}" for i in range(200)))
    client = ollama.Client(host=f"http://127.0.0.1:{port}")
    messages = [{"role": "user", "content": "Tell me a long story"}]
    seen = []
    try:
        for chunk in client.chat(model="qwen2.5:7b", messages=messages, stream=True):
            seen.append(chunk.message.content)
            if len(seen) == 50:  # well past the first draft (a second of streaming)
                time.sleep(1.2)
                daemon.stop(signal.SIGKILL)
    except Exception:  # the stream is cut by the kill
        pass
    assert len(seen) >= 50
    daemon.start()
    standin.chunk_delay = 0.0
    with daemon.client() as c:
        (session,) = c.sessions().sessions
        kept = c.history(session.id).messages[-1]
        assert kept.role == "assistant" and kept.status == "interrupted"
        assert kept.content and "".join(seen).startswith(kept.content[:200])
    again = client.chat(model="qwen2.5:7b", messages=messages)
    assert again.message.content
    with daemon.client() as c:
        (same,) = c.sessions().sessions  # no "Tell me a long story 2"
        history = c.history(same.id).messages
        assert [m.role for m in history] == ["user", "assistant", "assistant"]
        assert history[-1].status == "complete" and history[-1].content == again.message.content
