"""`ctxkeep models` and the model a command names, against the real daemon (in a thread)
and the stand-in as Ollama: listing, pulling, the default, options checked against Ollama's."""

import json


def test_models_lists_what_ollama_has(daemon, standin):
    shown = daemon.cli("models")
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "PARAMS", "CONTEXT", "LOADED", "HOST"]
    assert lines[1].startswith("* qwen2.5:7b") and "7.6B" in lines[1] and "32,768" in lines[1]
    assert lines[1].split()[-1] == "ollama"  # the one model server, as no [[backends]] names it
    assert any(line.split()[:1] == ["small:1b"] and "4,096" in line for line in lines)
    data = json.loads(daemon.cli("models", "--json").stdout)
    assert data["default_model"] == "qwen2.5:7b"
    assert {m["name"] for m in data["models"]} >= {"qwen2.5:7b", "small:1b", "thinker:8b"}
    assert daemon.cli("ask", "--model", "qwen2.5:7b", "hi").returncode == 0
    loaded = {m["name"]: m["loaded"] for m in json.loads(daemon.cli("models", "--json").stdout)["models"]}
    assert loaded["qwen2.5:7b"] is True  # /api/ps has it after a chat


def test_options_are_checked_against_ollamas(daemon):
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    typo = daemon.cli("set", sid, "--option", "temprature=0.2")
    assert typo.returncode == 1 and "no option 'temprature': did you mean 'temperature'?" in typo.stderr
    hot = daemon.cli("set", sid, "--option", "temperature=hot")
    assert hot.returncode == 1 and "temperature='hot'" in hot.stderr and "number" in hot.stderr
    window = daemon.cli("set", sid, "--option", "num_ctx=4096")
    assert window.returncode == 1 and "--num-ctx" in window.stderr
    assert daemon.cli("set", sid, "--option", "stop=END", "--option", "stop=DONE", "--option",
                      "top_k=40").returncode == 0
    assert daemon.cli("set", sid, "--option", "brand_new=1", "--force").returncode == 0  # a newer Ollama's


def test_models_pull_shows_progress_and_ends_once(daemon, standin):
    pulled = daemon.cli("models", "pull", "mistral:7b")
    assert pulled.returncode == 0, pulled.stderr
    assert "pulling manifest" in pulled.stderr and "success" in pulled.stderr
    assert "pulled mistral:7b" in pulled.stdout
    assert "mistral:7b" in daemon.cli("models").stdout  # Ollama lists it now
    assert daemon.cli("new", "--model", "mistral:7b", "-q").returncode == 0
    events = [json.loads(line) for line in daemon.cli("models", "pull", "nosuch:1b", "--json").stdout.splitlines()]
    assert [e["type"] for e in events].count("model.pull.result") == 1
    assert events[-1]["status"] == "failed" and "could not pull" in events[-1]["message"]
    assert daemon.cli("models", "pull", "nosuch:1b").returncode == 1


def test_models_default_sets_and_shows_the_default(daemon, standin):
    assert daemon.cli("models", "default").stdout.strip() == "qwen2.5:7b"
    refused = daemon.cli("models", "default", "nosuch:1b")
    assert refused.returncode == 1 and "no model 'nosuch:1b'" in refused.stderr
    changed = daemon.cli("models", "default", "small:1b")
    assert changed.returncode == 0 and "new sessions now use small:1b" in changed.stdout
    assert 'default_model = "small:1b"' in daemon.config_file.read_text()
    assert "small:1b (the default of new sessions)" in daemon.cli("status").stdout
    assert json.loads(daemon.cli("new", "--json").stdout)["model"] == "small:1b"
    assert any(line.startswith("* small:1b") for line in daemon.cli("models").stdout.splitlines())


def test_chat_asks_for_a_model_when_the_default_is_not_installed(daemon, standin, capsys):
    from ctxkeep.clients.cli.chat import open_session
    from ctxkeep.clients.cli.main import build_parser, command_in
    daemon.cli("models", "default", "gone:7b", "--force")
    piped = daemon.cli("chat", "ideas", input="hello\n")
    assert piped.returncode == 1 and "no model 'gone:7b'" in piped.stderr  # no terminal: no question
    answers = iter(["9", "small:1b", "y"])
    with daemon.client() as client:
        args = build_parser(command_in(["chat", "ideas"])).parse_args(["chat", "ideas"])
        session = open_session(client, args, lambda prompt: next(answers))
    shown = capsys.readouterr().out
    assert "The default model, gone:7b, is not installed" in shown and "small:1b" in shown
    assert "type a number from 1 to" in shown  # 9 is not on the list: asked again
    assert session.name == "ideas" and session.model == "small:1b"
    assert daemon.cli("models", "default").stdout.strip() == "small:1b"
