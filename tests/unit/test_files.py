"""@file references: syntax, every mode and file type, every refusal, tracking, and use from the CLI."""

import os
import socket
from pathlib import Path

import pytest

from ctxkeep.daemon.files import chunker
from ctxkeep.daemon.files.expand import FileSettings, expand
from ctxkeep.daemon.files.refs import find_refs
from file_tree import PY


def settings(**kw) -> FileSettings:
    return FileSettings(**kw)


def one(text: str, cwd: Path, **kw):
    (attachment,) = expand(text, str(cwd), settings(**kw), len)
    return attachment


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


def test_a_scoped_package_in_pasted_code_is_not_a_file():
    code = ("import { NavigationContainer } from '@react-navigation/native';\n"
            'const babel = require("@babel/core");\n"@types/node": "^20.1.0", and read @src/app.ts')
    assert [r.path for r in find_refs(code)] == ["src/app.ts"]


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
