"""The `ctxkeep` CLI against the real daemon, as a user runs it."""

import json
import signal
import subprocess
import sys
import time

import pytest

from conftest import wait_for
from ctxkeep.clients.cli.main import COMMANDS
from ctxkeep.protocol.events import GenerationError, GenerationToken


def test_help_on_every_command(daemon):
    top = daemon.cli("--help")
    assert top.returncode == 0
    for name in COMMANDS:
        assert name in top.stdout
        result = daemon.cli(name, "--help")
        assert result.returncode == 0 and "usage: ctxkeep" in result.stdout, name
    assert daemon.cli("daemon", "run", "--help").returncode == 0


def test_a_command_imports_only_its_own_module():
    """`ctxkeep status` pays for no other command's imports, nor for asyncio or CURVE."""
    probe = ("import sys\n"
             "from ctxkeep.clients.cli.main import build_parser, command_in\n"
             "build_parser(command_in(['status', '--json'])).parse_args(['status', '--json'])\n"
             "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                check=True).stdout.split())
    commands = {m.rsplit(".", 1)[1] for m in loaded if m.startswith("ctxkeep.clients.cli.")}
    assert commands == {"main", "common", "status"}
    assert not loaded & {"asyncio", "zmq.auth", "zmq.asyncio", "PySide6", "ollama"}


def test_a_command_runs_with_its_imports_frozen_out_of_garbage_collection(tmp_path):
    """The collection at exit does not walk every imported object (a fifth of `status`)."""
    probe = ("import gc\n"
             "from ctxkeep.clients.cli.main import main\n"
             f"code = main(['status', '--control', 'ipc://{tmp_path}/none'])\n"
             "print(code, gc.get_freeze_count() > 10_000)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split() == ["1", "True"]
    assert "ctxkeepd is not running" in result.stderr


def test_status(daemon, standin):
    result = daemon.cli("status")
    assert result.returncode == 0
    assert "ctxkeepd 0.1.0" in result.stdout
    assert f"ollama    0.12.6 at {standin.url}" in result.stdout
    data = json.loads(daemon.cli("status", "--json").stdout)
    assert data["ollama"]["reachable"] is True


def test_new_ask_show_sessions(daemon, standin):
    created = daemon.cli("new", "--name", "cli", "--model", "qwen2.5:7b", "-q")
    assert created.returncode == 0
    sid = created.stdout.strip()
    standin.script("Blue light scatters more.")
    asked = daemon.cli("ask", "cli", "Why is the sky blue?")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == "Blue light scatters more.\n"
    piped = daemon.cli("ask", sid, "-", input="Tell me more\n")
    assert piped.returncode == 0 and piped.stdout.startswith("You said 3 words")
    shown = daemon.cli("show", "cli")
    assert "Why is the sky blue?" in shown.stdout and "Blue light scatters more." in shown.stdout
    lines = [json.loads(line) for line in daemon.cli("show", "cli", "--jsonl").stdout.splitlines()]
    assert [m["role"] for m in lines] == ["user", "assistant", "user", "assistant"]
    assert lines[2]["content"] == "Tell me more"
    listing = daemon.cli("sessions")
    assert sid in listing.stdout and "cli" in listing.stdout
    exact = next(line for line in listing.stdout.splitlines() if sid in line)
    assert "/8,192" in exact and "~" not in exact  # the last turn's exact count
    assert daemon.cli("set", sid, "--system", "Be brief.").returncode == 0
    estimated = next(line for line in daemon.cli("sessions").stdout.splitlines() if sid in line)
    assert "~" in estimated  # the prompt changed: an estimate, marked as one


def test_errors_exit_nonzero_with_message_on_stderr(daemon, standin):
    result = daemon.cli("ask", "-s", "missing", "hi")
    assert result.returncode == 1
    assert "no session with id or name 'missing'" in result.stderr
    refused = daemon.cli("new", "--name", "m", "--model", "absent:1b")
    assert refused.returncode == 1 and "has no model 'absent:1b'" in refused.stderr
    assert "installed: qwen2.5:7b, small:1b" in refused.stderr and "--force" in refused.stderr
    daemon.cli("new", "--name", "m", "--model", "absent:1b", "--force")
    result = daemon.cli("ask", "m", "hi")
    assert result.returncode == 1 and "model_not_found" in result.stderr
    assert "ollama pull absent:1b" in result.stderr


def test_no_daemon_says_how_to_start_it(daemon):
    daemon.stop()
    result = daemon.cli("status")
    assert result.returncode == 1
    assert "ctxkeepd is not running" in result.stderr and "ctxkeep daemon run" in result.stderr


def test_events_json_sees_every_token(daemon, standin):
    standin.chunk_delay = 0.005
    standin.script("one two three four five six seven eight nine ten")
    watcher = subprocess.Popen([sys.executable, "-m", "ctxkeep.clients.cli.main", "events", "--json"],
                               env=daemon.env, stdout=subprocess.PIPE, text=True)
    try:
        first = json.loads(watcher.stdout.readline())  # the greeting: the subscription is live
        assert first["type"] == "daemon.status"
        assert daemon.cli("ask", daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip(),
                          "count").returncode == 0
        tokens, seen = [], []
        for line in watcher.stdout:
            event = json.loads(line)
            seen.append(event["type"])
            if event["type"] == "generation.token":
                tokens.append(event["text"])
            if event["type"] == "response.generation":
                break
        assert "".join(tokens) == "one two three four five six seven eight nine ten"
        assert seen.index("query.received") < seen.index("generation.token")
    finally:
        watcher.terminate()
        watcher.wait(10)


def test_chat_streams_and_shows_the_gauge(daemon, standin):
    standin.script("Hello! How can I help?")
    result = daemon.cli("chat", "--model", "qwen2.5:7b", input="hi there\n/usage\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "Hello! How can I help?" in result.stdout
    # the gauge shows what the next prompt holds: the prompt with the answer in it
    with daemon.client() as c:
        (session,) = c.sessions().sessions
    assert session.token_count == standin.chats[-1].prompt_tokens < session.next_tokens
    assert f"{session.next_tokens} / 8,192 tokens (0%)" in result.stdout


def test_chat_ctrl_c_cancels_the_generation_not_the_program(daemon, standin):
    standin.chunk_delay = 0.05
    standin.script(" ".join(f"w{i}" for i in range(400)), "second answer")
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    # Ctrl-C as at a terminal, even when these tests run as a background job (which
    # ignores SIGINT, and a program inherits that)
    chat = subprocess.Popen([sys.executable, "-m", "ctxkeep.clients.cli.main", "chat", sid],
                            env=daemon.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        with daemon.client() as watcher:
            watcher.subscribe("")
            chat.stdin.write("long please\n")
            chat.stdin.flush()
            wait_for(watcher, GenerationToken, timeout=20)  # the answer is streaming
            chat.send_signal(2)  # SIGINT, as Ctrl-C
            try:
                cut = wait_for(watcher, GenerationError, timeout=20)
            except AssertionError:
                chat.kill()
                out, err = chat.communicate()
                raise AssertionError(f"Ctrl-C did not cancel: chat exit {chat.returncode}, "
                                     f"stdout {out[-500:]!r}, stderr {err[-2000:]!r}") from None
            assert cut.code == "cancelled"
        chat.stdin.write("again\n/quit\n")
        chat.stdin.flush()
        out, err = chat.communicate(timeout=30)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert chat.returncode == 0, err
    assert "[cancelled] cancelled by a client" in out
    assert "second answer" in out


@pytest.mark.parametrize("args", [["show", "--last", "x"], ["ask", "--json", "--jsonl", "hi"], ["bogus"]])
def test_usage_errors(daemon, args):
    assert daemon.cli(*args).returncode == 2


def test_set_rename_delete_cancel(daemon, standin):
    sid = daemon.cli("new", "--name", "tune", "-q").stdout.strip()
    result = daemon.cli("set", "tune", "--model", "small:1b", "--num-ctx", "2048", "--compaction-model", "qwen2.5:7b",
                        "--option", "temperature=0.2", "--option", "stop=END", "--system", "Be terse.")
    assert result.returncode == 0, result.stderr
    with daemon.client() as c:
        s = c.session(sid).session
        assert (s.model, s.num_ctx, s.options, s.system) == (
            "small:1b", 2048, {"temperature": 0.2, "stop": ["END"]}, "Be terse.")
        assert s.compaction_model == "qwen2.5:7b"
    assert daemon.cli("set", "tune", "--option", "nonsense").returncode == 2
    assert daemon.cli("rename", "tune", "tuned").returncode == 0
    assert "nothing was running" in daemon.cli("cancel", "tuned").stdout
    assert daemon.cli("delete", "tuned").returncode == 0
    assert daemon.cli("show", sid).returncode == 1


def test_validation_errors_in_the_users_words(daemon):
    bad = daemon.cli("new", "--model", "qwen2.5:7b", "--num-ctx", "0")
    assert bad.returncode == 1 and "`num_ctx` must be at least 256" in bad.stderr
    assert "Expected" not in bad.stderr
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    lock = daemon.cli("goals", sid, "--lock")
    assert lock.returncode != 0 and "--decide" in lock.stderr
    assert daemon.cli("config").returncode == 0  # no action: show


def test_ask_as_a_one_off_question(daemon, standin):
    """Unquoted words; the last session when none is named; a session named by the first
    word; a new one with --new/--model/--system; stdin added; --json and --jsonl."""
    first = daemon.cli("ask", "hi")  # no session yet: a new one, on the default model
    assert first.returncode == 0 and "new session chat-1 (" in first.stderr
    daemon.cli("new", "--name", "notes", "--model", "qwen2.5:7b", "-q")
    asked = daemon.cli("ask", "Why", "is", "the", "sky", "blue?")  # the most recent session
    assert asked.returncode == 0, asked.stderr
    assert standin.chats[-1].body["messages"][-1]["content"] == "Why is the sky blue?"
    named = daemon.cli("ask", "notes", "what", "next?")
    assert named.returncode == 0 and standin.chats[-1].body["messages"][-1]["content"] == "what next?"
    with daemon.client() as c:
        counts = {s.name: s.message_count for s in c.sessions().sessions}
    assert counts == {"chat-1": 2, "notes": 4}
    only_piped = daemon.cli("ask", "notes", input="Tell me more\n")  # the session, then stdin
    assert only_piped.returncode == 0
    assert standin.chats[-1].body["messages"][-1]["content"] == "Tell me more"
    piped = daemon.cli("ask", "notes", "Review", "this:", input="def f(): pass\n")
    assert piped.returncode == 0
    assert standin.chats[-1].body["messages"][-1]["content"] == "Review this:\n\ndef f(): pass"
    one_off = daemon.cli("ask", "--model", "small:1b", "--system", "Be terse.", "--json", "hi")
    end = json.loads(one_off.stdout)
    assert one_off.returncode == 0 and end["type"] == "response.generation"
    assert standin.chats[-1].body["model"] == "small:1b" and standin.chats[-1].body["messages"][0]["content"] == "Be terse."
    lines = [json.loads(line) for line in daemon.cli("ask", "notes", "more", "--jsonl").stdout.splitlines()]
    assert lines[0]["type"] == "query.received" and lines[-1]["type"] == "response.generation"
    assert {line["generation_id"] for line in lines} == {lines[-1]["generation_id"]}


def test_show_last_n(daemon, standin):
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    for i in range(3):
        assert daemon.cli("ask", sid, f"question {i}").returncode == 0
    shown = [json.loads(line)["seq"] for line in daemon.cli("show", sid, "--last", "2", "--jsonl").stdout.splitlines()]
    assert shown == [4, 5]
    active = [json.loads(line)["seq"] for line in
              daemon.cli("show", sid, "--active", "--last", "3", "--jsonl").stdout.splitlines()]
    assert active == [3, 4, 5]
    text = daemon.cli("show", sid, "--last", "1").stdout
    assert "#5" in text and "#4" not in text


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


def test_chat_continues_or_creates_by_name(daemon, standin):
    made = daemon.cli("chat", "ideas", "--model", "qwen2.5:7b", input="first\n/quit\n")
    assert made.returncode == 0 and made.stdout.startswith("ideas (")  # created with that name
    again = daemon.cli("chat", "ideas", input="second\n/quit\n")  # it exists now: the same one
    assert again.stdout.startswith("ideas (") and "2 messages" in again.stdout
    daemon.cli("new", "--name", "other", "--model", "qwen2.5:7b", "-q")
    assert daemon.cli("ask", "ideas", "third").returncode == 0  # ideas is the most recent now
    resumed = daemon.cli("chat", "-c", input="/quit\n")
    assert resumed.stdout.startswith("ideas (") and "6 messages" in resumed.stdout
    unknown = daemon.cli("chat", "ideas", input="/frobnicate\nstill here\n/quit\n")
    assert "unknown command /frobnicate" in unknown.stdout and "You said" in unknown.stdout


def test_chat_completes_commands_and_paths(tmp_path):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from ctxkeep.clients.cli.lines import chat_completer
    (tmp_path / "notes.md").write_text("x")
    completer = chat_completer(["/help", "/usage", "/undo", "/quit"])

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text, len(text)), CompleteEvent())]
    assert complete("/u") == ["/usage", "/undo"]
    assert complete("/usage x") == []
    assert complete(f"look at @{tmp_path}/no") == ["tes.md"]
    assert complete("plain words") == []


def test_no_color_and_dumb_terminals_get_no_escapes(monkeypatch):
    import io

    from ctxkeep.clients.cli.common import Styles

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert Styles(Tty()).bold  # a terminal takes them
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Styles(Tty()).bold and not Styles(Tty()).red
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not Styles(Tty()).bold


def test_chat_on_a_terminal_edits_completes_and_keeps_history(daemon, standin, tmp_path):
    """On a pseudo-terminal: Tab completes a /command, a turn streams, Ctrl-D leaves, and
    the lines are kept for the next run (prompt_toolkit)."""
    import os
    import pty
    import re
    import select
    import time
    master, slave = pty.openpty()
    env = dict(daemon.env, XDG_STATE_HOME=str(tmp_path), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    chat = subprocess.Popen([sys.executable, "-m", "ctxkeep.clients.cli.main", "chat", "--model",
                             "qwen2.5:7b"], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    seen = b""

    def shown(raw: bytes) -> bytes:
        """The text without the terminal's control sequences (a redraw may split a word)."""
        return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", raw)

    def send(keys: bytes, *then: bytes, timeout: float = 15.0) -> None:
        """Type `keys`, then wait until the terminal shows each of `then`, in that order."""
        nonlocal seen
        base, at = len(seen), 0
        os.write(master, keys)
        deadline = time.monotonic() + timeout
        for token in then:  # each after the one before, in the text as shown
            while (found := shown(seen[base:]).find(token, at)) < 0:
                assert time.monotonic() < deadline, f"no {token!r} in {seen[base:][-400:]!r}"
                if select.select([master], [], [], 0.1)[0]:
                    seen += os.read(master, 4096)
            at = found + len(token)
    try:
        send(b"", b"you>")
        send(b"/us\t", b"/usage")  # Tab completes the command
        send(b"\r", b"conversation budget", b"you>")
        send(b"hello there\r", b"You said 2 words", b"you>")
        os.write(master, b"\x04")  # Ctrl-D
        assert chat.wait(15) == 0
    finally:
        if chat.poll() is None:
            chat.kill()
        os.close(master)
    kept = (tmp_path / "ctxkeep" / "chat_history").read_text()
    assert "+/usage" in kept and "+hello there" in kept


def test_export_import_round_trip_and_other_shapes(daemon, standin, tmp_path):
    sid = daemon.cli("new", "--name", "trip", "--model", "qwen2.5:7b", "--system", "Be brief.", "-q").stdout.strip()
    for i in range(3):
        assert daemon.cli("ask", sid, f"question {i}").returncode == 0
    first = tmp_path / "first.json"
    assert daemon.cli("export", sid, "-o", str(first)).returncode == 0
    daemon.cli("delete", sid)
    made = daemon.cli("import", str(first))
    assert made.returncode == 0 and made.stdout.startswith("imported trip (")
    again = json.loads(daemon.cli("export", "trip").stdout)
    before = json.loads(first.read_text())

    def without_ids_and_times(doc):
        return {**{k: v for k, v in doc.items() if k != "id"},
                "messages": [{k: v for k, v in m.items() if k != "created"} for m in doc["messages"]]}
    assert without_ids_and_times(again) == without_ids_and_times(before)
    assert len(before["messages"]) == 6 and before["system"] == "Be brief."
    # what the imported session's model sees: every message, then the next question
    assert daemon.cli("ask", "trip", "and now?").returncode == 0
    assert len(standin.chats[-1].body["messages"]) == 1 + 6 + 1
    markdown = daemon.cli("export", "trip", "--format", "md").stdout
    assert markdown.startswith("# trip\n") and "## user\n\nquestion 0\n" in markdown
    # chat messages as Ollama's and OpenAI's APIs take them, and JSON lines
    openai = tmp_path / "openai.json"
    openai.write_text(json.dumps({"model": "qwen2.5:7b", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "assistant", "content": "Hi."}]}))
    got = json.loads(daemon.cli("import", str(openai), "--name", "oa", "--json").stdout)
    assert (got["system"], got["model"], got["message_count"]) == ("You are terse.", "qwen2.5:7b", 2)
    lines = tmp_path / "chat.jsonl"
    lines.write_text('{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n')
    assert json.loads(daemon.cli("import", str(lines), "--json").stdout)["message_count"] == 2
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "wizard", "content": "x"}]')
    refused = daemon.cli("import", str(bad))
    assert refused.returncode == 1 and "message 1" in refused.stderr and "roles" in refused.stderr


def test_a_conversation_larger_than_a_frame_is_imported_in_parts(daemon, tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                                       "content": f"{i} " + "word " * 200}) + "\n" for i in range(600)))
    got = json.loads(daemon.cli("import", str(big), "--json").stdout)  # ~600 KB: three requests
    assert got["message_count"] == 600
    exported = json.loads(daemon.cli("export", got["id"]).stdout)
    assert [m["content"].split()[0] for m in exported["messages"]] == [str(i) for i in range(600)]


def test_json_output_of_commands_that_print(daemon, standin):
    made = json.loads(daemon.cli("new", "--name", "js", "--model", "qwen2.5:7b", "--json").stdout)
    assert made["name"] == "js" and made["model"] == "qwen2.5:7b"
    assert daemon.cli("ask", "js", "hello").returncode == 0
    shown = json.loads(daemon.cli("show", "js", "--json").stdout)
    assert shown["session"]["id"] == made["id"] and shown["session"]["options"] == {}
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant"]
    changed = json.loads(daemon.cli("set", "js", "--num-ctx", "4096", "--json").stdout)
    assert changed["num_ctx"] == 4096
    assert json.loads(daemon.cli("files", "js", "--json").stdout) == []


def test_search_across_sessions(daemon, standin):
    for name, text in (("one", "The walrus and the carpenter"), ("two", "A carpenter ant, not a walrus")):
        daemon.cli("new", "--name", name, "--model", "qwen2.5:7b", "-q")
        daemon.cli("set", name, "--memory", "none")  # the stand-in's echo stays the question's
        assert daemon.cli("ask", name, text).returncode == 0
    found = daemon.cli("search", "walrus", "CARPENTER")
    lines = found.stdout.splitlines()
    assert found.returncode == 0 and lines[-1] == "4 matches"  # each question and its echo
    assert lines[0].startswith("two #1 assistant") and "walrus" in lines[1]
    data = json.loads(daemon.cli("search", "walrus", "-s", "one", "--json").stdout)
    assert data["total"] == 2 and {h["session_name"] for h in data["hits"]} == {"one"}
    assert daemon.cli("search", "the").returncode == 1  # only a stop word


def test_shell_completion(daemon, tmp_path):
    for shell in ("bash", "zsh", "fish"):
        script = daemon.cli("completion", shell)
        assert script.returncode == 0 and "_ARGCOMPLETE" in script.stdout, shell
    daemon.cli("new", "--name", "skyline", "--model", "qwen2.5:7b", "-q")
    out = tmp_path / "completions"

    def complete(line: str) -> list[str]:
        env = dict(daemon.env, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
                   _ARGCOMPLETE_STDOUT_FILENAME=str(out), _ARGCOMPLETE_IFS="\n")
        subprocess.run([sys.executable, "-m", "ctxkeep.clients.cli.main"], env=env, check=True, timeout=30)
        return out.read_text().split("\n")
    assert [w.strip() for w in complete("ctxkeep sho")] == ["show"]
    assert [w.strip() for w in complete("ctxkeep show --la")] == ["--last"]
    assert [w.strip() for w in complete("ctxkeep show sky")] == ["skyline"]  # asked of the daemon


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


def test_json_of_compact_and_snapshot(daemon, standin):
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    for i in range(6):
        assert daemon.cli("ask", sid, f"question number {i} " + "word " * 30).returncode == 0
    plan = json.loads(daemon.cli("compact", sid, "--dry-run", "--tail", "1", "--json").stdout)
    assert plan["type"] == "compaction.plan" and plan["summarize"]
    done = daemon.cli("compact", sid, "--tail", "1", "--json")
    result = json.loads(done.stdout)
    assert result["type"] == "compaction.result" and result["status"] == "ok", done.stderr
    snaps = json.loads(daemon.cli("snapshot", sid, "list", "--json").stdout)
    assert snaps and snaps[0]["reason"].startswith("before compaction")
    made = json.loads(daemon.cli("snapshot", sid, "create", "--json").stdout)
    assert made["reason"] == "manual"


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


def test_a_first_run_says_what_to_do_next(daemon_factory, tmp_path):
    """A fresh install's default model (llama3.2) that Ollama lacks: `status` says so with
    what to do; `ask` says what ask can do (not --force, which it does not take); `show`
    takes the latest session as `ask` does; `import` errors name its --name and --model."""
    import json
    daemon = daemon_factory()
    daemon.write_config('default_model = "llama3.2"\n')
    daemon.start()
    deadline = time.monotonic() + 10
    while "NOT INSTALLED" not in (status := daemon.cli("status")).stdout and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "llama3.2 (the default of new sessions) — NOT INSTALLED in Ollama: `ctxkeep models pull " \
        "llama3.2`" in status.stdout and "ctxkeep models default NAME" in status.stdout, status.stdout
    asked = daemon.cli("ask", "hello")
    assert asked.returncode == 1 and "--force" not in asked.stderr, asked.stderr
    assert "the default model is not installed in Ollama (installed: qwen2.5:7b" in asked.stderr
    assert "ask with --model NAME" in asked.stderr and "ctxkeep models default NAME" in asked.stderr
    assert daemon.cli("ask", "--model", "qwen2.5:7b", "hello").returncode == 0
    shown = daemon.cli("show")
    assert shown.returncode == 0 and "hello" in shown.stdout, shown.stderr
    conversation = tmp_path / "c.json"
    conversation.write_text(json.dumps({"name": "mine", "messages": [{"role": "user", "content": "hi"}]}))
    missing = daemon.cli("import", str(conversation))
    assert missing.returncode == 1 and "--model NAME" in missing.stderr, missing.stderr
    assert daemon.cli("import", str(conversation), "--model", "qwen2.5:7b", "--name", "mine").returncode == 0
    taken = daemon.cli("import", str(conversation), "--model", "qwen2.5:7b", "--name", "mine")
    assert taken.returncode == 1 and "--name NAME" in taken.stderr, taken.stderr
    absent = daemon.cli("import", str(tmp_path / "nothing.json"))
    assert absent.returncode == 1 and "cannot read" in absent.stderr and "Traceback" not in absent.stderr


def test_export_import_keeps_alternatives_what_the_model_sees_and_branch_links(daemon, standin, tmp_path):
    sid = daemon.cli("new", "--name", "pick", "--model", "qwen2.5:7b", "-q").stdout.strip()
    standin.script("Blue.", "Teal.", "Carrot.")
    daemon.cli("chat", sid, input="Name a colour\n/retry\n/edit Name a vegetable\n/quit\n")
    daemon.cli("branch", "pick", "--at", "0", "--name", "pick-2")
    with daemon.client() as c:
        seen = [m.content for m in c.history(sid, active=True).messages]
    assert seen == ["Name a vegetable", "Carrot."]
    exported = tmp_path / "pick.json"
    daemon.cli("export", "pick-2", "-o", str(tmp_path / "pick-2.json"))
    daemon.cli("export", "pick", "-o", str(exported))
    daemon.cli("delete", "pick-2")
    daemon.cli("delete", "pick")
    assert daemon.cli("import", str(exported)).returncode == 0
    with daemon.client() as c:
        again = c.session("pick").session
        assert [m.content for m in c.history(again.id, active=True).messages] == seen
        links = [(m.reply_to, m.alternative_of) for m in c.history(again.id).messages]
    assert links == [(-1, -1), (0, -1), (0, 1), (-1, 0), (3, 2)]
    # the branch, imported after its source: linked to it again, by name
    branch = daemon.cli("import", str(tmp_path / "pick-2.json"), "--json")
    assert json.loads(branch.stdout)["branched_from"] == again.id, branch.stderr
    daemon.cli("delete", "pick")
    alone = daemon.cli("import", str(tmp_path / "pick-2.json"), "--name", "orphan")
    assert alone.returncode == 0 and "imported without the link" in alone.stderr
