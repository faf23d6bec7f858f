"""Memory across sessions through the real daemon and the stand-in (issue 43): the CLI's
`memory search` / `memory forget`, `set --memory`, `show` naming the sources, and HTTP
conversations following the same rules (X-Ctxkeep-Memory)."""

import json

import httpx
import ollama

from conftest import until_idle
from ctxkeep.daemon.memory import block

MODEL = "qwen2.5:7b"
CAR = "We finally bought the car: a dark green 2019 Skoda Octavia estate, from a dealer in Lyon."
ASK = "Which car did we buy, and where from?"


def last_prompt(standin) -> str:
    return [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]


def test_the_cli_searches_forgets_and_shows_memory(daemon, standin):
    with daemon.client() as c:
        c.subscribe("")
        garage = c.create_session(model=MODEL, name="garage").session
        until_idle(c, garage.id, c.send(garage.id, CAR).generation_id)
        asker = c.create_session(model=MODEL, name="weekend").session
        until_idle(c, asker.id, c.send(asker.id, ASK).generation_id)
        assert last_prompt(standin).startswith(f"{ASK}\n\n{block.OPENING}")  # the block after the question
        assert f'in "garage" user: {CAR}' in last_prompt(standin)

    found = daemon.cli("memory", "search", "skoda", "octavia")
    assert found.returncode == 0, found.stderr
    assert "garage #0 user" in found.stdout and "Skoda Octavia" in found.stdout
    shown = daemon.cli("show", "weekend")
    assert "(from other sessions: garage #0" in shown.stdout

    forgot = daemon.cli("memory", "forget", "garage", "-m", "0", "-m", "1")  # the fact, and the answer echoing it
    assert forgot.returncode == 0 and "never recalled into another session" in forgot.stdout
    assert daemon.cli("memory", "search", "skoda", "octavia").returncode == 1  # nothing left to find
    assert json.loads(daemon.cli("memory", "forget", "garage", "-m", "0", "--undo", "--json").stdout)["forgotten"] == [1]
    assert "garage #0" in daemon.cli("memory", "search", "skoda").stdout

    private = json.loads(daemon.cli("set", "garage", "--memory", "private", "--json").stdout)
    assert private["memory"] == "private"
    assert daemon.cli("memory", "search", "skoda").returncode == 1
    bad = daemon.cli("memory", "forget", "garage", "-m", "99")
    assert bad.returncode != 0 and "no message #99" in bad.stderr


def test_http_conversations_remember_and_follow_the_memory_header(door, standin):
    client = ollama.Client(host=door.http.url, headers={"Authorization": f"Bearer {door.http.token}"})
    client.chat(model=MODEL, messages=[{"role": "user", "content": CAR}])
    client.chat(model=MODEL, messages=[{"role": "user", "content": ASK}])
    assert CAR in last_prompt(standin)  # another conversation's words, recalled

    quiet = ollama.Client(host=door.http.url, headers={
        "Authorization": f"Bearer {door.http.token}", "X-Ctxkeep-Memory": "none"})
    quiet.chat(model=MODEL, messages=[{"role": "user", "content": ASK + " Tell me again."}])
    assert CAR not in last_prompt(standin)
    with door.client() as c:
        modes = {s.name: s.memory for s in c.sessions().sessions}
    assert "none" in modes.values()

    refused = httpx.post(door.http.url + "/api/chat", headers={
        "Authorization": f"Bearer {door.http.token}", "X-Ctxkeep-Memory": "sometimes"},
        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": False})
    assert refused.status_code == 400 and "X-Ctxkeep-Memory takes all, none, private" in refused.text


def test_http_answers_say_what_memory_added(door, standin):
    """Every HTTP answer carries what memory added (sessions, tokens); `none` turns it off."""
    def chat(messages, memory="", stream=False):
        headers = {"Authorization": f"Bearer {door.http.token}"}
        if memory:
            headers["X-Ctxkeep-Memory"] = memory
        return httpx.post(door.http.url + "/api/chat", headers=headers, timeout=30,
                          json={"model": MODEL, "messages": messages, "stream": stream})
    first = chat([{"role": "user", "content": CAR}])
    assert first.headers["X-Ctxkeep-Memory-Added"] == "sessions=0; tokens=0"
    asked = chat([{"role": "user", "content": ASK}], stream=True)
    sessions, tokens = [int(part.split("=")[1]) for part in asked.headers["X-Ctxkeep-Memory-Added"].split("; ")]
    assert sessions == 1 and tokens > 0 and CAR in last_prompt(standin)
    off = chat([{"role": "user", "content": ASK + " Once more."}], memory="none")
    assert off.headers["X-Ctxkeep-Memory-Added"] == "sessions=0; tokens=0" and CAR not in last_prompt(standin)
