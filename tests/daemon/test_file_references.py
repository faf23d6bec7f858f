"""@file references through the daemon: a question's block and its record, tracking, the
CLI, a file read as it was when sent, and heavy files read outside the daemon's process."""

import os
from pathlib import Path

from conftest import wait_terminal
from ctxkeep.daemon.files import chunker
from ctxkeep.protocol.events import ResponseGeneration

# -- syntax -----------------------------------------------------------------------


# -- modes and file types ---------------------------------------------------------------


# -- refusals: each a short note, never an error ------------------------------------------


# -- through the daemon ------------------------------------------------------------------


def test_ask_with_reference_sends_the_block_and_records_it(daemon, standin, tree):
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    result = daemon.cli("ask", sid, "What does @geo.py:area do? Also @missing.txt", cwd=tree)
    assert result.returncode == 0, result.stderr
    assert "attached geo.py (area" in result.stderr
    assert "warning: @missing.txt: no such file" in result.stderr
    sent = standin.chats[-1].body["messages"][-1]["content"]
    assert sent.startswith("What does @geo.py:area do? Also @missing.txt\n\n<file path=\"geo.py\" mode=\"area\">")
    assert '<file path="missing.txt" error="no such file"/>' in sent
    with daemon.client() as c:
        history = c.history(sid).messages
        assert history[0].content == "What does @geo.py:area do? Also @missing.txt"
        assert [(f.path, f.mode, bool(f.error)) for f in history[0].files] == [
            ("geo.py", "area", False), ("missing.txt", "auto", True)]
        uses = c.files(sid).files
        assert [(u.path, u.mode, u.uses) for u in uses] == [("geo.py", "area", 1)]
        assert uses[0].tokens > 0 and len(uses[0].sha256) == 64 and uses[0].last_seq == 0
        usage = c.usage(sid).usage
        assert usage.segments.files > 0


def test_unused_files_query_and_cli(daemon, standin, tree):
    sid = daemon.cli("new", "--model", "qwen2.5:7b", "-q").stdout.strip()
    assert daemon.cli("ask", sid, "Look at @notes.txt", cwd=tree).returncode == 0
    assert daemon.cli("ask", sid, "And @geo.py:summary", cwd=tree).returncode == 0
    for i in range(2):
        assert daemon.cli("ask", sid, f"plain question {i}", cwd=tree).returncode == 0
    with daemon.client() as c:
        assert [u.path for u in c.files(sid).files] == ["geo.py", "notes.txt"]
        # history: 0 notes, 2 geo, 4 and 6 plain; the last 6 messages are seqs 2..7
        assert [u.path for u in c.files(sid, unused_in_last=6).files] == ["notes.txt"]
        assert [u.path for u in c.files(sid, unused_in_last=4).files] == ["geo.py", "notes.txt"]
    listing = daemon.cli("files", sid)
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert lines[0].split() == ["PATH", "MODE", "TOKENS", "USES", "LAST", "MSG", "MODIFIED", "SHA256"]
    assert lines[1].startswith("geo.py") and " summary " in lines[1]
    assert lines[2].startswith("notes.txt") and " full " in lines[2]
    assert "notes.txt" in daemon.cli("files", sid, "--unused-in-last", "6").stdout


def test_chat_with_reference(daemon, standin, tree):
    standin.script("It computes the area.")
    result = daemon.cli("chat", "--model", "qwen2.5:7b", input="Explain @geo.py:area\n/quit\n", cwd=tree)
    assert result.returncode == 0, result.stderr
    assert "attached geo.py (area" in result.stdout and "It computes the area." in result.stdout
    assert "def area(r: float)" in standin.chats[-1].body["messages"][-1]["content"]


def test_reference_reads_the_file_as_it_was_when_sent(daemon, standin, tree):
    with daemon.client() as c:
        c.subscribe("")
        s = c.create_session(model="qwen2.5:7b").session
        acc = c.send(s.id, "@notes.txt", cwd=str(tree))
        (tree / "notes.txt").write_text("changed\n")
        end, _ = wait_terminal(c, acc.generation_id)
        assert isinstance(end, ResponseGeneration)
        assert "line one" in standin.chats[-1].body["messages"][-1]["content"]


def _cpu_seconds(pid: int) -> float:
    """The process's own CPU time (user + system), not its children's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_heavy_files_are_read_outside_the_daemons_own_process(daemon_factory, tmp_path):
    """Ten references to a 1-MiB Python file in an 8,192 window: in full, each is refused by
    its size before it is read; as outlines, they are made in a worker process, and once
    the first passes the window the rest are not read. Either way the daemon's own CPU
    time stays a fraction of what outlining one such file costs (it stalled other clients
    for seconds when it outlined all ten in a thread, then refused the turn anyway)."""
    import time

    from ctxkeep.protocol.events import GenerationError
    big = tmp_path / "big.py"
    big.write_text("".join(f"def f{i}(x, y=1):\n    return x + {i}  # {'y' * 40}\n" for i in range(12000)))
    start = time.process_time()
    chunker.summarize(str(big), big.read_text())
    one_outline = time.process_time() - start
    daemon = daemon_factory().start()
    pid = daemon.proc.pid
    with daemon.client(timeout=60) as c:
        c.subscribe("")
        sid = c.create_session(model="qwen2.5:7b", num_ctx=8192).session.id
        for how in (":full", ""):
            before = _cpu_seconds(pid)
            acc = c.send(sid, "read " + " ".join([f"@big.py{how}"] * 10), cwd=str(tmp_path))
            end, _ = wait_terminal(c, acc.generation_id, timeout=120)
            used = _cpu_seconds(pid) - before
            assert used < 0.5 * one_outline, (how, used, one_outline)
            warnings = " ".join(acc.warnings)
            if how == ":full":  # ten notes instead: the question itself is answered
                assert warnings.count("cannot fit this session's window in full") == 10, warnings
                assert isinstance(end, ResponseGeneration), end
            else:  # the first outline alone is larger than the window
                assert warnings.count("the files before it are already about") == 9, warnings
                assert isinstance(end, GenerationError) and end.code == "context_overflow", end
