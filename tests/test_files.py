"""@file references: syntax, every mode and file type, every refusal, tracking, and use from the CLI."""

import json
import os
import socket
from pathlib import Path

import pytest

from conftest import wait_terminal
from ctxkeep.daemon.files import chunker
from ctxkeep.daemon.files.expand import FileSettings, expand
from ctxkeep.daemon.files.refs import find_refs
from ctxkeep.protocol.events import ResponseGeneration

PY = '''"""Geometry helpers.

More text.
"""
import math
from dataclasses import dataclass

SCALE = 2


def area(r: float) -> float:
    """Area of a circle."""
    return math.pi * r * r


@dataclass
class Point:
    """A point in the plane."""

    x: float
    y: float

    @property
    def norm(self) -> float:
        """Distance from the origin."""
        return math.hypot(self.x, self.y)
'''


def settings(**kw) -> FileSettings:
    return FileSettings(**kw)


def one(text: str, cwd: Path, **kw):
    (attachment,) = expand(text, str(cwd), settings(**kw), len)
    return attachment


@pytest.fixture
def tree(tmp_path) -> Path:
    (tmp_path / "geo.py").write_text(PY)
    (tmp_path / "notes.md").write_text("# Title\nintro\n## Part one\ntext\n```\n# not a heading\n```\n## Part two\nmore\n")
    (tmp_path / "conf.json").write_text(json.dumps({"server": {"port": 1, "hosts": ["a", "b"]}, "debug": True}))
    (tmp_path / "conf.toml").write_text('[server]\nport = 1\n[[users]]\nname = "x"\n')
    (tmp_path / "conf.yaml").write_text("server:\n  port: 1\nlist:\n  - a: 1\n")
    (tmp_path / "app.js").write_text("// Adds.\nfunction add(a, b) { return a + b }\nclass Shape {\n  area() { return 0 }\n}\n")
    (tmp_path / "main.go").write_text("package main\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n")
    (tmp_path / "lib.rs").write_text("/// Doc.\npub fn add(a: i32) -> i32 {\n    a\n}\nstruct S;\n")
    (tmp_path / "notes.txt").write_text("line one\nline two\nline three\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.txt").write_text("x")
    return tmp_path


# -- syntax -----------------------------------------------------------------------


def test_reference_forms():
    refs = find_refs('read @src/a.py, @b.md:full @c.py:summary @d.py:Cls.meth @e.txt:lines:3-9 '
                     '@dir/ and @"with space/f.txt":full.')
    assert [(r.path, r.mode) for r in refs] == [
        ("src/a.py", "auto"), ("b.md", "full"), ("c.py", "summary"), ("d.py", "element"),
        ("e.txt", "lines"), ("dir/", "listing"), ("with space/f.txt", "full")]
    assert refs[3].element == "Cls.meth" and (refs[4].first_line, refs[4].last_line) == (3, 9)


def test_text_that_only_looks_like_a_reference_is_left_alone():
    text = ("mail me@example.com, use @property or @dataclass, ping @alice\n"
            "```python\n@decorator.py\ndef f(): ...\n```\nand `@inline.py` too")
    assert find_refs(text) == []


def test_trailing_punctuation_is_not_part_of_the_path():
    assert [r.path for r in find_refs("see @notes.txt. And @a/b.py!")] == ["notes.txt", "a/b.py"]


# -- modes and file types ---------------------------------------------------------------


def test_small_file_is_included_in_full(tree):
    a = one("@notes.txt", tree)
    assert a.mode == "full" and not a.error
    assert a.block == '<file path="notes.txt" mode="full" lines="3" bytes="29">\nline one\nline two\nline three\n</file>'
    assert a.sha256 and a.size == 29 and a.summary  # the summary is kept for later compaction


def test_large_file_is_summarized(tree):
    a = one("@geo.py", tree, summary_threshold=100)
    assert a.mode == "summary"
    assert "def area(r: float) -> float  # Area of a circle." in a.block
    assert "return math.pi" not in a.block


def test_explicit_full_and_summary(tree):
    assert "return math.pi" in one("@geo.py:full", tree, summary_threshold=10).block
    assert "return math.pi" not in one("@geo.py:summary", tree).block


def test_python_outline():
    outline = chunker.summarize("geo.py", PY)
    assert outline.splitlines()[0] == '"""Geometry helpers."""'
    assert "imports: math, dataclasses" in outline
    assert "L8 SCALE" in outline
    assert "L11 def area(r: float) -> float  # Area of a circle." in outline
    assert "L16-26 class Point  # A point in the plane." in outline
    assert "  L24 norm()" in outline


def test_python_element_keeps_decorators_and_docstring(tree):
    method = one("@geo.py:Point.norm", tree).block
    assert "@property" in method and '"""Distance from the origin."""' in method
    assert "class Point" not in method
    cls = one("@geo.py:Point", tree).block
    assert cls.splitlines()[1] == "@dataclass"
    assert one("@geo.py:area", tree).block.count("def area") == 1


def test_python_syntax_error_falls_back_to_generic_outline():
    outline = chunker.summarize("bad.py", "def broken(:\n    pass\n" + "x = 1\n" * 30 + "class Later:\n")
    assert outline.startswith("33 lines")
    assert "L33 class Later:" in outline


def test_markdown_outline_with_section_sizes(tree):
    outline = one("@notes.md:summary", tree).block
    assert "L1 Title (2 lines" in outline and "  L3 Part one (5 lines" in outline
    assert "not a heading" not in outline


@pytest.mark.parametrize("name, expected", [
    ("conf.json", ["server: {2 keys}", "  hosts: [2 items]", "debug: bool"]),
    ("conf.toml", ["server: {1 keys}", "users: [1 items]", "    name: str"]),
    ("conf.yaml", ["server: {1 keys}", "  port: int", "list: [1 items]"]),
])
def test_structured_files_by_key_structure(tree, name, expected):
    block = one(f"@{name}:summary", tree).block
    for line in expected:
        assert line in block.splitlines(), block


@pytest.mark.parametrize("name, element, outline_line, element_text", [
    ("app.js", "Shape.area", "L3-5 class Shape {", "area() { return 0 }"),
    ("main.go", "Add", "L4-6 func Add(a, b int) int {", "// Add adds.\nfunc Add(a, b int) int {"),
    ("lib.rs", "add", "L2-4 pub fn add(a: i32) -> i32 {", "/// Doc.\npub fn add"),
])
def test_other_languages_through_tree_sitter(tree, name, element, outline_line, element_text):
    assert outline_line in one(f"@{name}:summary", tree).block
    assert element_text in one(f"@{name}:{element}", tree).block


def test_generic_outline_for_unknown_types():
    text = "\n".join(f"line {i}" for i in range(40)) + "\nfunction late() {}\n"
    outline = chunker.summarize("script.unknown", text)
    assert outline.startswith("41 lines") and "L41 function late() {}" in outline


def test_lines_mode(tree):
    assert one("@notes.txt:lines:2-3", tree).block.splitlines()[1:3] == ["2| line two", "3| line three"]
    assert "not in the file" in one("@notes.txt:lines:7-9", tree).error


def test_directory_listing(tree):
    block = one("@./", tree).block
    assert "sub/" in block.splitlines() and "geo.py (" in block


def test_unicode_and_spaces_in_paths(tree):
    folder = tree / "mes documents"
    folder.mkdir()
    (folder / "résumé été.txt").write_text("Grüße, naïve café ✓\n")
    a = one('@"mes documents/résumé été.txt"', tree)
    assert not a.error and "Grüße, naïve café ✓" in a.block
    (tree / "données.md").write_text("# Über\n")
    assert not one("@données.md", tree).error


def test_missing_element(tree):
    assert one("@geo.py:nothing", tree).error == "no function or class 'nothing'"


# -- refusals: each a short note, never an error ------------------------------------------


def test_traversal_is_refused(tree):
    a = one("@../outside.txt", tree)
    assert a.error == "outside the allowed folders"
    assert a.block == '<file path="../outside.txt" error="outside the allowed folders"/>'
    assert one("@/etc/hostname", tree).error == "outside the allowed folders"


def test_symlink_out_is_refused(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("secret")
    (tree / "link.txt").symlink_to(outside)
    a = one("@link.txt", tree)
    assert a.error == "a link that leads outside the allowed folders"
    assert "secret" not in a.block
    (tree / "inside.txt").symlink_to(tree / "notes.txt")
    assert not one("@inside.txt", tree).error  # a link that stays inside is fine


def test_symlinked_directory_out_is_refused(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outdir")
    (outside / "f.txt").write_text("x")
    (tree / "escape").symlink_to(outside)
    assert one("@escape/f.txt", tree).error == "a link that leads outside the allowed folders"
    assert one("@escape/", tree).error == "a link that leads outside the allowed folders"


def test_device_is_refused(tree):
    assert one("@/dev/null", tree, roots=[str(tree), "/dev"]).error == "a device, not a regular file"


def test_fifo_is_refused_without_blocking(tree):
    os.mkfifo(tree / "pipe.txt")
    assert one("@pipe.txt", tree).error == "a FIFO, not a regular file"


def test_socket_is_refused(tree):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tree / "sock.txt"))
    try:
        assert one("@sock.txt", tree).error == "a socket, not a regular file"
    finally:
        server.close()


def test_huge_file_is_refused(tree):
    (tree / "huge.log").write_bytes(b"x" * 2048)
    assert one("@huge.log", tree, max_bytes=1024).error == "too large (2,048 bytes; the limit is 1,024)"


def test_binary_file_is_refused(tree):
    (tree / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert one("@blob.bin", tree).error == "a binary file"
    (tree / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert one("@latin1.txt", tree).error == "a binary file (not UTF-8 text)"


def test_missing_file_is_refused(tree):
    assert one("@absent.txt", tree).error == "no such file"


def test_unreadable_file_is_refused(tree):
    # A file that opens but cannot be read even by root: the start of a process's memory.
    a = one("@/proc/self/mem", tree, roots=[str(tree), "/proc"])
    assert a.error.startswith("not readable")


def test_no_working_directory(tree):
    (a,) = expand("@notes.txt", "", settings(), len)
    assert a.error == "no working directory was sent with the message"


def test_working_directory_must_be_inside_file_roots(tree, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere")
    (other / "x.txt").write_text("secret\n")
    (a,) = expand("@x.txt", str(other), settings(roots=[str(tree)]), len)
    assert a.error == "the working directory is outside file_roots"
    # a remote client's cwd is never used: paths start at the first root
    remote = FileSettings(roots=[str(tree)], remote=True)
    (b,) = expand("@notes.txt", "/", remote, len)
    assert not b.error and "notes" in b.block
    (c,) = expand("@etc/passwd", "/", FileSettings(remote=True), len)
    assert "file_roots" in c.error


def test_references_and_bytes_per_message_are_limited(tree):
    many = expand(" ".join(["@notes.md"] * 5), str(tree), settings(max_refs=3), len)
    assert [bool(a.error) for a in many] == [False, False, False, True, True]
    assert "3 references per message" in many[3].error
    size = (tree / "notes.md").stat().st_size
    capped = expand("@notes.md @notes.md @notes.md", str(tree), settings(max_total_bytes=size + 1), len)
    assert [bool(a.error) for a in capped] == [False, False, True]
    assert "file_bytes_per_message" in capped[2].error


def test_configured_roots(tree, tmp_path_factory):
    other = tmp_path_factory.mktemp("docs")
    (other / "guide.md").write_text("# Guide\n")
    assert not one(f"@{other}/guide.md", tree, roots=[str(tree), str(other)]).error
    assert one(f"@{tree}/notes.txt", other, roots=[str(other)]).error == "outside the allowed folders"
    assert one("@notes.txt", tree, roots=[str(other)]).error == "the working directory is outside file_roots"


def test_remote_clients_may_be_refused(tree):
    assert "may not read files" in one("@notes.txt", tree, allowed=False).error


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
