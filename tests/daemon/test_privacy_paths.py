"""Privacy follows the words (issue 58): every path that copies a private or forgotten
conversation's text — a branch, an HTTP edit (ctxkeepd branches by itself), a resend without
the memory header, an import, an export and import round trip, a snapshot restore — keeps it
out of every other session's prompt. Each test plants a secret and greps every prompt the
stand-in receives afterwards."""

import json

import httpx
import pytest

from conftest import idle

MODEL = "qwen2.5:7b"
SECRET = "The vault's launch code is ZEBRA-4417-QUOKKA, never write it down."
CODE = "ZEBRA-4417-QUOKKA"
ASK = "What is the vault's launch code again?"


def prompts_since(standin, start: int) -> str:
    return "\n".join(m.get("content", "") or "" for c in standin.chats[start:] for m in c.body["messages"])


def turn(c, sid: str, text: str) -> None:
    c.turn(sid, text)
    idle(c, sid)


def ask_elsewhere(c, standin) -> str:
    """A new session asks for the secret: every prompt the server got since."""
    start = len(standin.chats)
    asker = c.create_session(model=MODEL).session.id
    turn(c, asker, ASK)
    return prompts_since(standin, start)


def planted(c, memory: str = "private") -> str:
    sid = c.create_session(model=MODEL, name="vault").session.id
    if memory:
        c.set_model(sid, memory=memory)
    turn(c, sid, SECRET)
    return sid


def test_the_control_case_recalls_the_secret(daemon, standin):
    """Without privacy the question does recall it (so each test below can fail)."""
    with daemon.client() as c:
        c.subscribe("")
        planted(c, memory="")
        assert CODE in ask_elsewhere(c, standin)


@pytest.mark.parametrize("how", ["private", "forgotten_session", "forgotten_message"])
def test_a_branch_keeps_its_source_private(daemon, standin, how):
    with daemon.client() as c:
        c.subscribe("")
        sid = planted(c, memory="private" if how == "private" else "")
        if how == "forgotten_session":
            c.memory_forget(sid)
        elif how == "forgotten_message":
            c.memory_forget(sid, [0, 1])
        branch = c.branch(sid).session
        assert branch.memory == ("private" if how == "private" else None)
        turn(c, branch.id, "Thanks, noted.")
        assert CODE not in ask_elsewhere(c, standin)
    assert CODE not in daemon.cli("memory", "search", "vault", "launch", "code").stdout


def test_the_cli_branch_keeps_it_private(daemon, standin):
    with daemon.client() as c:
        c.subscribe("")
        planted(c)
    made = daemon.cli("branch", "vault")
    assert made.returncode == 0, made.stderr
    listed = daemon.cli("sessions")
    assert "private" in listed.stdout  # `sessions` shows a session's memory setting
    with daemon.client() as c:
        c.subscribe("")
        assert CODE not in ask_elsewhere(c, standin)


def test_an_export_and_import_round_trip_and_an_import_stay_private(daemon, standin, tmp_path):
    with daemon.client() as c:
        c.subscribe("")
        planted(c)
    exported = daemon.cli("export", "vault")
    assert exported.returncode == 0, exported.stderr
    path = tmp_path / "vault.json"
    path.write_text(exported.stdout)
    imported = daemon.cli("import", str(path), "--name", "vault-again", "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["memory"] == "private"  # the export's setting, kept
    plain = tmp_path / "plain.json"  # the same words as chat messages, no ctxkeep fields
    plain.write_text(json.dumps([{"role": "user", "content": SECRET}, {"role": "assistant", "content": "Noted."}]))
    assert daemon.cli("import", str(plain)).returncode == 0
    with daemon.client() as c:
        c.subscribe("")
        assert CODE not in ask_elsewhere(c, standin)


def test_a_snapshot_restore_keeps_forgotten_words_forgotten(daemon, standin):
    with daemon.client() as c:
        c.subscribe("")
        sid = planted(c, memory="")
        snap = c.snapshot(sid).snapshot.id
        c.memory_forget(sid, [0, 1])
        c.restore(sid, snap)
        assert CODE not in ask_elsewhere(c, standin)


def http(door, memory: str = ""):
    headers = {"Authorization": f"Bearer {door.http.token}"}
    if memory:
        headers["X-Ctxkeep-Memory"] = memory
    return lambda messages: httpx.post(door.http.url + "/api/chat", headers=headers, timeout=30, json={
        "model": MODEL, "messages": messages, "stream": False})


def test_http_edits_and_resends_without_the_header_stay_private(door, standin):
    private, plain = http(door, "private"), http(door)
    first = private([{"role": "user", "content": SECRET}])
    assert first.status_code == 200, first.text
    answer = first.json()["message"]["content"]
    history = [{"role": "user", "content": SECRET}, {"role": "assistant", "content": answer}]
    assert private(history + [{"role": "user", "content": "Thanks."}]).status_code == 200
    # an edit of the last question (ctxkeepd branches by itself), then the whole conversation
    # resent without the header: copies of the private words in sessions not marked private
    assert private(history + [{"role": "user", "content": "Thanks a lot."}]).status_code == 200
    assert plain(history + [{"role": "user", "content": "And one more thing."}]).status_code == 200
    start = len(standin.chats)
    assert plain([{"role": "user", "content": ASK}]).status_code == 200
    assert CODE not in prompts_since(standin, start)
