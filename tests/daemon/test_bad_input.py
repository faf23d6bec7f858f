"""Bad input and slow requests against the real daemon (in a thread): a slow request does not
stall other clients, bad ids and names get invalid_argument, a file name that is not UTF-8
is listed."""

import json
import os
import time

import pytest

from conftest import raw_request, raw_socket, until_idle
from ctxkeep.clients import CtxkeepError

MODEL = "qwen2.5:7b"


def test_a_slow_request_does_not_stall_other_clients(daemon, standin, client):
    """A dry-run compaction waits on a slow /api/show; another client's ping is answered
    meanwhile (the slow reply is still outstanding when the ping's arrives)."""
    s = client.create_session(model="thinker:8b", force=True).session  # /api/show not asked yet
    standin.fail_next("delay", seconds=3.0, path="/api/show")
    slow = raw_socket(daemon)
    slow.send(json.dumps({"type": "compact", "id": "slow", "session": s.id, "dry_run": True}).encode())
    deadline = time.monotonic() + 10
    while "/api/show" not in standin.posts:  # the slow request is waiting on Ollama
        assert time.monotonic() < deadline, "the dry run never asked /api/show"
        time.sleep(0.01)
    fast = raw_socket(daemon)
    assert raw_request(fast, b'{"type": "ping", "id": "p"}')["type"] == "pong"
    assert not slow.poll(0), "the slow request should still be waiting on Ollama"
    assert json.loads(slow.recv() if slow.poll(10000) else b"{}").get("id") == "slow"
    slow.close()
    fast.close()


def test_bad_ids_and_names_get_invalid_argument(client):
    s = client.create_session(model=MODEL).session
    for bad in ("-1", "f" * 40, "not hex", "0x10"):
        with pytest.raises(CtxkeepError) as err:
            client.restore(s.id, bad)
        assert err.value.code == "invalid_argument" and "snapshot" in err.value.message
        with pytest.raises(CtxkeepError) as err:
            client.delete_snapshot(s.id, bad)
        assert err.value.code == "invalid_argument"
    with pytest.raises(CtxkeepError) as err:
        client.create_session(model=MODEL, name="😀" * 200)
    assert err.value.code == "invalid_argument" and "bytes" in err.value.message
    with pytest.raises(CtxkeepError) as err:
        client.rename(s.id, "😀" * 100)
    assert err.value.code == "invalid_argument"
    assert client.ping()


def test_a_file_name_that_is_not_utf8_is_listed(client, tmp_path):
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "fine.txt").write_text("x")
    os.close(os.open(os.fsencode(folder) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o600))
    s = client.create_session(model=MODEL).session
    acc = client.send(s.id, "what is in @odd/", cwd=str(tmp_path))
    until_idle(client, s.id, acc.generation_id)
    (question,) = [m for m in client.history(s.id).messages if m.role == "user"]
    assert question.files[0].mode == "listing" and not question.files[0].error
