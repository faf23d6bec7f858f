"""The `ctxkeep` CLI's commands against the real daemon (in a thread), as a user runs them:
`main(argv)` with the daemon's environment, what it prints and its exit status."""

import json

import pytest

from ctxkeep.clients.cli.main import COMMANDS


def test_help_on_every_command(daemon):
    top = daemon.cli("--help")
    assert top.returncode == 0
    for name in COMMANDS:
        assert name in top.stdout
        result = daemon.cli(name, "--help")
        assert result.returncode == 0 and "usage: ctxkeep" in result.stdout, name
    assert daemon.cli("daemon", "run", "--help").returncode == 0


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
    assert "no session is named 'Why': asked in notes, the most recent session" in asked.stderr  # never silently
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
