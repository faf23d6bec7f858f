"""FileChunker: a file's summary (an outline far smaller than the file) and its parts.

- Python by its AST: module docstring, imports, constants, classes with their
  methods' signatures, functions with signatures and the first docstring
  line, with line numbers. A syntax error falls back to the generic outline.
- Markdown by its headings, with each section's size.
- Other source files by their definitions, parsed with tree-sitter.
- JSON, TOML and YAML by their key structure.
- Anything else: size, line count, the head, and definition-like lines.

Element extraction (`@file:NAME`) returns a function, class or Class.method
with its decorators and docstring.
"""

import ast
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from ctxkeep.daemon.files import treesitter

_DEFINITION = re.compile(
    r"^\s*(?:export\s+|pub(?:\(\w+\))?\s+|public\s+|private\s+|protected\s+|static\s+|async\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|interface|trait|impl|type|module|sub|proc|"
    r"procedure|macro|const|let|var)\b")


class ElementNotFound(Exception):
    """No function or class of that name in the file."""


def _first_line(doc: str | None, limit: int = 64) -> str:
    line = doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """`def name(a: int, *args, b=..., **kw) -> T`: annotations kept, default values elided."""
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    a = node.args

    def arg(x: ast.arg, default: bool = False) -> str:
        text = f"{x.arg}: {ast.unparse(x.annotation)}" if x.annotation else x.arg
        return f"{text}=…" if default else text
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    parts = [arg(x, i >= first_default) for i, x in enumerate(positional)]
    if a.posonlyargs:
        parts.insert(len(a.posonlyargs), "/")
    if a.vararg:
        parts.append(f"*{arg(a.vararg)}")
    elif a.kwonlyargs:
        parts.append("*")
    parts += [arg(x, d is not None) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        parts.append(f"**{arg(a.kwarg)}")
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({', '.join(parts)}){returns}"


def _lines(node: ast.AST) -> str:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])  # type: ignore[attr-defined]
    return f"L{start}-{node.end_lineno}"  # type: ignore[attr-defined]


def python_outline(source: str) -> str:
    """The outline of a Python module (raises SyntaxError)."""
    tree = ast.parse(source)
    out: list[str] = []
    doc = _first_line(ast.get_docstring(tree))
    if doc:
        out.append(f'"""{doc}"""')
    imports: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            imports += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            imports.append(f"{'.' * node.level}{node.module or ''}")
    if imports:
        out.append("imports: " + ", ".join(dict.fromkeys(imports)))
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()]
            if names:
                out.append(f"L{node.lineno} {', '.join(names)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # private helpers: their signature says enough
            doc = "" if node.name.startswith("_") else _first_line(ast.get_docstring(node))
            out.append(f"L{node.lineno} {_signature(node)}" + (f"  # {doc}" if doc else ""))
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            doc = _first_line(ast.get_docstring(node))
            out.append(f"{_lines(node)} class {node.name}" + (f"({bases})" if bases else "")
                       + (f"  # {doc}" if doc else ""))
            methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for m in methods:
                args = [a.arg for a in m.args.args if a.arg not in ("self", "cls")]
                out.append(f"  L{m.lineno} {m.name}({', '.join(args)})")
    return "\n".join(out)


def python_element(source: str, name: str) -> str:
    """The source of function, class or Class.method `name`, decorators and docstring included."""
    tree = ast.parse(source)
    scope: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in name.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                          ast.ClassDef)) and n.name == part), None)
        if node is None:
            raise ElementNotFound(f"no function or class {name!r}")
        scope = getattr(node, "body", [])
    assert node is not None
    lines = source.splitlines()
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])  # type: ignore[attr-defined]
    return "\n".join(lines[start - 1:node.end_lineno])  # type: ignore[attr-defined]


def markdown_outline(text: str) -> str:
    """Headings with line numbers and each section's size."""
    lines = text.splitlines()
    heads: list[tuple[int, int, str]] = []
    fence = False
    for i, line in enumerate(lines, 1):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = re.match(r"^(#{1,6})\s+(.*)", line) if not fence else None
        if m:
            heads.append((i, len(m.group(1)), m.group(2).strip()))
    if not heads:
        return generic_outline(text)
    out = []
    for k, (first, level, title) in enumerate(heads):
        end = heads[k + 1][0] - 1 if k + 1 < len(heads) else len(lines)
        size = sum(len(x) + 1 for x in lines[first - 1:end])
        out.append(f"{'  ' * (level - 1)}L{first} {title} ({end - first + 1} lines, {size:,} chars)")
    return "\n".join(out)


def _structure(value: Any, depth: int = 0, max_depth: int = 4) -> Iterator[str]:
    pad = "  " * depth
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and depth < max_depth:
                kind = f"{{{len(item)} keys}}" if isinstance(item, dict) else f"[{len(item)} items]"
                yield f"{pad}{key}: {kind}"
                yield from _structure(item, depth + 1, max_depth)
            else:
                yield f"{pad}{key}: {type(item).__name__}"
    elif isinstance(value, list) and value:
        yield f"{pad}[each item like:]"
        yield from _structure(value[0], depth + 1, max_depth)


def structured_outline(text: str, kind: str) -> str:
    """The key structure of a JSON, TOML or YAML document (raises ValueError when it is not)."""
    import yaml  # only for a YAML file (16 ms of every daemon start otherwise)
    try:
        data = {"json": json.loads, "toml": tomllib.loads, "yaml": yaml.safe_load}[kind](text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ValueError(str(exc)) from None
    lines = list(_structure(data))
    if len(lines) > 200:
        lines = lines[:200] + [f"... {len(lines) - 200} more keys"]
    return "\n".join(lines) or f"{type(data).__name__}"


def generic_outline(text: str, head: int = 15) -> str:
    """Size, line count, the first lines and the definition-like lines."""
    lines = text.splitlines()
    out = [f"{len(lines):,} lines, {len(text):,} chars", "head:"]
    out += [f"  {line}" for line in lines[:head]]
    defs = [f"  L{i} {line.strip()[:120]}" for i, line in enumerate(lines, 1)
            if i > head and _DEFINITION.match(line)]
    if defs:
        out.append("definitions:")
        out += defs[:150]
    return "\n".join(out)


def kind_of(path: str) -> str:
    """python, markdown, json, toml, yaml, a tree-sitter language, or text."""
    suffix = PurePath(path).suffix.lower()
    fixed = {".py": "python", ".pyi": "python", ".md": "markdown", ".markdown": "markdown",
             ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}
    return fixed.get(suffix) or treesitter.language_for(suffix) or "text"


def summarize(path: str, text: str) -> str:
    """The outline of a file, by its kind; the generic one when its own parser fails."""
    kind = kind_of(path)
    try:
        if kind == "python":
            return python_outline(text)
        if kind == "markdown":
            return markdown_outline(text)
        if kind in ("json", "toml", "yaml"):
            return structured_outline(text, kind)
        if kind != "text":
            outline = treesitter.outline(kind, text)
            if outline:
                return outline
    except (SyntaxError, ValueError, RecursionError):
        pass
    return generic_outline(text)


def element(path: str, text: str, name: str) -> str:
    """A named function or class of a file (raises ElementNotFound)."""
    kind = kind_of(path)
    if kind == "python":
        try:
            return python_element(text, name)
        except SyntaxError:
            raise ElementNotFound(f"the file does not parse, so {name!r} cannot be found") from None
    if kind not in ("text", "markdown", "json", "toml", "yaml"):
        found = treesitter.element(kind, text, name)
        if found:
            return found
    raise ElementNotFound(f"no function or class {name!r}")


def line_range(text: str, first: int, last: int) -> str:
    """Lines first..last (1-based, inclusive), each numbered."""
    lines = text.splitlines()
    if first < 1 or last < first or first > len(lines):
        raise ElementNotFound(f"lines {first}-{last} are not in the file ({len(lines)} lines)")
    last = min(last, len(lines))
    width = len(str(last))
    return "\n".join(f"{n:>{width}}| {lines[n - 1]}" for n in range(first, last + 1))
