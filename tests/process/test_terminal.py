"""The CLI on a real terminal (a pseudo-terminal driven by pexpect): what a user at a
keyboard sees and leaves behind."""

import io
import os
import stat
import sys
from pathlib import Path

import pexpect
import pytest

CPR_REQUEST = "\x1b[6n"  # "where is the cursor?": a terminal that never answers made exits wait


def spawn_chat(daemon, cwd: Path, state: Path, *args: str) -> pexpect.spawn:
    env = dict(daemon.env, XDG_STATE_HOME=str(state), TERM="xterm")
    child = pexpect.spawn(sys.executable, ["-m", "ctxkeep.clients.cli.main", "chat", *args],
                          env=env, cwd=str(cwd), encoding="utf-8", timeout=30)
    child.logfile_read = io.StringIO()  # everything the chat wrote to the terminal
    return child


def test_ctrl_d_after_a_message_with_a_file_leaves_at_once(daemon, tmp_path):
    (tmp_path / "hello_world.py").write_text("print('hello world')\n")
    child = spawn_chat(daemon, tmp_path, tmp_path / "state", "files")
    child.expect("you>")
    child.sendline("look at @hello_world.py")
    child.expect("attached hello_world.py")
    child.expect("tokens")
    child.expect("you>")
    child.sendeof()
    child.expect(pexpect.EOF)  # no cursor-position wait
    child.close()
    assert child.exitstatus == 0
    assert CPR_REQUEST not in child.logfile_read.getvalue()


def test_the_line_history_is_private(daemon, tmp_path):
    """Every line the user typed: the file 0600 in a 0700 folder, even when a looser
    folder and file were there before."""
    state = tmp_path / "state"
    (state / "ctxkeep").mkdir(parents=True, mode=0o755)
    (state / "ctxkeep").chmod(0o755)
    history = state / "ctxkeep" / "chat_history"
    history.write_text("")
    history.chmod(0o644)
    child = spawn_chat(daemon, tmp_path, state, "private")
    child.expect("you>")
    child.sendline("my secret plans")
    child.expect("tokens")
    child.expect("you>")
    child.sendeof()
    child.expect(pexpect.EOF)
    assert "my secret plans" in history.read_text()
    assert stat.S_IMODE(os.stat(history).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(history.parent).st_mode) == 0o700


@pytest.fixture(autouse=True)
def _umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def ask_waiting(daemon, sid: str, env: dict, cwd, line: str) -> str:
    """`ask SID hello` on a terminal with `env`, past a waiting line matching `line`, to its
    answer and exit 0: what the terminal showed."""
    child = pexpect.spawn(sys.executable, ["-m", "ctxkeep.clients.cli.main", "ask", sid, "hello"],
                          env=env, cwd=str(cwd), encoding="utf-8", timeout=30)
    child.logfile_read = io.StringIO()
    child.expect(line)
    child.expect("You said 1 words")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    return child.logfile_read.getvalue()


def test_ask_on_a_terminal_says_what_it_waits_for(daemon, standin, tmp_path):
    """A model server that says nothing for a while: `ask` shows a status line with the
    seconds (it printed nothing before), then the answer where the line was."""
    sid = daemon.cli("new", "--model", "thinker:8b", "-q").stdout.strip()
    standin.fail_next("delay", seconds=2.6)
    shown = ask_waiting(daemon, sid, dict(daemon.env, TERM="xterm"), tmp_path,
                        r"\[waiting 2 s: Ollama is loading thinker:8b into memory")
    assert shown.index("\x1b7") < shown.index("[waiting") < shown.index("\x1b8\x1b[K") < shown.index("You said")


@pytest.mark.parametrize("where", ["piped", "NO_COLOR", "TERM=dumb"])
def test_ask_says_what_it_waits_for_without_a_colour_terminal_too(daemon, standin, tmp_path, where):
    """No colour is not no information: piped, with NO_COLOR or on a dumb terminal, the
    waiting notice is a plain line on stderr."""
    sid = daemon.cli("new", "--model", "thinker:8b", "-q").stdout.strip()
    standin.fail_next("delay", seconds=2.6)
    if where == "piped":
        done = daemon.cli("ask", sid, "hello")
        assert done.returncode == 0 and "You said 1 words" in done.stdout
        assert "ctxkeep: waiting 2 s: Ollama is loading thinker:8b into memory" in done.stderr
        assert "\x1b" not in done.stderr
        return
    env = dict(daemon.env, TERM="dumb") if where == "TERM=dumb" else dict(daemon.env, TERM="xterm", NO_COLOR="1")
    shown = ask_waiting(daemon, sid, env, tmp_path, r"ctxkeep: waiting 2 s: Ollama is loading thinker:8b into memory .*\r?\n")
    assert "\x1b7" not in shown


def test_edit_alone_opens_the_last_question_in_the_editor(daemon, tmp_path):
    editor = tmp_path / "reword.sh"  # an "editor" that rewords what it is given
    editor.write_text("#!/bin/sh\nsed -i 's/colour/vegetable/' \"$1\"\n")  # a new file, as vim may
    editor.chmod(0o755)
    daemon.env["EDITOR"] = str(editor)
    child = spawn_chat(daemon, tmp_path, tmp_path / "state", "reword")
    child.expect("you>")
    child.sendline("Name a colour")
    child.expect("tokens")
    child.expect("you>")
    child.sendline("/edit")
    child.expect("tokens")
    child.expect("you>")
    child.sendeof()
    child.expect(pexpect.EOF)
    with daemon.client() as c:
        session = c.session("reword").session
        asked = [m.content for m in c.history(session.id, active=True).messages if m.role == "user"]
    assert asked == ["Name a vegetable"]


def test_a_waiting_line_wider_than_the_terminal_is_cut_to_fit(daemon, standin, tmp_path):
    """On a terminal of 40 columns the waiting line is cut to fit (a line that wraps cannot
    be redrawn in place), its seconds kept."""
    sid = daemon.cli("new", "--model", "thinker:8b", "-q").stdout.strip()
    standin.fail_next("delay", seconds=2.6)
    child = pexpect.spawn(sys.executable, ["-m", "ctxkeep.clients.cli.main", "ask", sid, "hello"],
                          env=dict(daemon.env, TERM="xterm", COLUMNS="40"), cwd=str(tmp_path), encoding="utf-8",
                          timeout=30, dimensions=(24, 40))
    child.logfile_read = io.StringIO()
    child.expect(r"\[waiting 2 s: ")
    child.expect("You said 1 words")
    child.expect(pexpect.EOF)
    shown = child.logfile_read.getvalue()
    line = shown[shown.index("[waiting 2 s"):].split("\x1b")[0]
    assert len(line) <= 39 and line.endswith("…"), line
