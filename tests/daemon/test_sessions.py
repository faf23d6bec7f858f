"""Session requests: create, list, get, rename, delete, settings, paged history."""

import pytest

from conftest import wait_terminal
from ctxkeep.clients import CtxkeepError
from ctxkeep.protocol.events import SessionCreated, SessionDeleted, SessionUpdated


def next_of(client, kind):
    while True:
        item = client.next_event(timeout=5)
        assert item is not None, f"no {kind.__name__} event"
        if isinstance(item[1], kind):
            return item


def test_create_defaults_and_event(client):
    s = client.create_session().session
    assert s.name == "chat-1" and s.model == "qwen2.5:7b" and s.num_ctx == 8192
    topic, event = next_of(client, SessionCreated)
    assert topic == f"session.created/{s.id}" and event.session.id == s.id
    assert client.create_session().session.name == "chat-2"


def test_get_by_id_name_or_prefix(client):
    s = client.create_session(name="research").session
    assert client.session(s.id).session.id == s.id
    assert client.session("research").session.id == s.id
    assert client.session(s.id[:6]).session.id == s.id
    with pytest.raises(CtxkeepError) as err:
        client.session("nothing-like-it")
    assert err.value.code == "unknown_session"


def test_rename_keeps_names_unique(client):
    a = client.create_session(name="a").session
    client.create_session(name="b")
    renamed = client.rename(a.id, "c").session
    assert renamed.name == "c"
    assert next_of(client, SessionUpdated)[1].session.name == "c"
    with pytest.raises(CtxkeepError) as err:
        client.rename("c", "b")
    assert err.value.code == "invalid_argument"
    with pytest.raises(CtxkeepError):
        client.create_session(name="b")
    assert client.session("c").session.id == a.id


def test_list_sorted_by_recent_use(client):
    a = client.create_session(name="old").session
    b = client.create_session(name="new").session
    client.set_system(a.id, "touch")
    assert [s.id for s in client.sessions().sessions] == [a.id, b.id]


def test_settings(client):
    s = client.create_session(model="qwen2.5:7b").session
    s = client.set_system(s.id, "You are terse.").session
    assert s.system == "You are terse."
    s = client.set_model(s.id, model="small:1b", num_ctx=2048, options={"temperature": 0.1}).session
    assert (s.model, s.num_ctx, s.options) == ("small:1b", 2048, {"temperature": 0.1})
    s = client.set_model(s.id, num_ctx=4096).session
    assert s.model == "small:1b" and s.options == {"temperature": 0.1}


def test_delete(client):
    s = client.create_session(name="gone").session
    acc = client.send(s.id, "hi")
    wait_terminal(client, acc.generation_id)
    client.delete("gone")
    next_of(client, SessionDeleted)
    with pytest.raises(CtxkeepError):
        client.session(s.id)
    assert client.create_session(name="gone").session.message_count == 0


def test_history_pages(client, standin):
    s = client.create_session(model="qwen2.5:7b").session
    for i in range(6):
        acc = client.send(s.id, f"question {i}")
        wait_terminal(client, acc.generation_id)
    seen, start = [], 0
    while start is not None:
        page = client.history(s.id, start=start, limit=5)
        assert page.total == 12
        seen += page.messages
        start = page.next
    assert [m.seq for m in seen] == list(range(12))
    assert [m.content for m in seen if m.role == "user"] == [f"question {i}" for i in range(6)]


def test_the_window_is_capped_by_the_model_from_creation(client):
    """num_ctx past the model's context_length: the reply and session.created already say
    the real window (Ollama's /api/show is asked at create), not num_ctx until a turn."""
    s = client.create_session(model="qwen2.5:7b", num_ctx=1_000_000).session
    assert (s.num_ctx, s.window) == (1_000_000, 32768)
    _, event = next_of(client, SessionCreated)
    assert event.session.window == 32768
    s = client.set_model(s.id, model="small:1b").session  # a new model: its window at once
    assert s.window == 4096


def test_setting_goals_stamps_them(client):
    import time

    from ctxkeep.protocol.goals import Goals
    s = client.create_session().session
    before = time.time()
    goals = client.set_goals(s.id, Goals(goal="ship it")).goals
    assert goals.updated >= before
    assert client.goals(s.id).goals.updated == goals.updated


def test_branch_from_the_cli_and_the_list_shows_it(daemon, client):
    s = client.create_session(name="trip").session
    for text in ("Plan a trip to Porto", "Three days, by train"):
        acc = client.send(s.id, text)
        wait_terminal(client, acc.generation_id)
    made = daemon.cli("branch", "trip", "--at", "1")
    assert made.returncode == 0, made.stderr
    assert "trip (branch)" in made.stdout and "at #1" in made.stdout
    branch = client.session("trip (branch)").session
    assert (branch.branched_from, branch.branched_at, branch.message_count) == (s.id, 1, 2)
    assert [m.content for m in client.history(branch.id).messages] == \
        [m.content for m in client.history(s.id).messages][:2]
    assert "trip @1" in daemon.cli("sessions").stdout
    refused = daemon.cli("branch", "trip", "--at", "9")
    assert refused.returncode != 0 and "#0 to #3" in refused.stderr
