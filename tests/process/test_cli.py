"""The `ctxkeep` CLI as a program of its own: what it imports, its signals, a terminal,
its completion script, a first run with no daemon. (Its commands against the daemon are
tests/daemon/test_cli_commands.py; its parts alone, tests/unit/test_cli_parts.py.)"""

import json
import signal
import subprocess
import sys
import time

from conftest import wait_for
from ctxkeep.protocol.events import GenerationError, GenerationToken


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
