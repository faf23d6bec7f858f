"""The daemon's layers point one way, read from its imports (`ast`, no import runs).

The order, lowest first, is written here and in the README's map: a module may import
its own layer and those below it, never one above; no module imports a name another
module keeps private (`_name`); and no two modules import each other, however
indirectly (imports inside functions count).
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The daemon's layers, lowest first: (name, the modules or packages under ctxkeep.daemon).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("errors", "tokens", "config")),
    ("store", ("store",)),
    ("model backends", ("backends",)),
    ("event bus", ("events",)),
    ("job queue", ("jobs",)),
    ("context engine", ("context",)),
    ("retrieval", ("retrieval",)),
    ("memory and files", ("memory", "files")),
    ("recall", ("recall",)),
    ("compaction", ("compaction",)),
    ("turns", ("turns",)),
    ("engine wiring", ("services",)),
    ("handlers", ("handlers",)),
    ("transports", ("transports",)),
    ("process", ("server", "main", "maintenance")),
]
#: The top-level packages: clients and the daemon both stand on the protocol, apart.
PACKAGES = {"protocol": ("ctxkeep.protocol",), "daemon": ("ctxkeep.protocol", "ctxkeep.daemon"),
            "clients": ("ctxkeep.protocol", "ctxkeep.clients")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "ctxkeep." + ".".join(parts)


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A source file's syntax tree (read once: every test here walks them all)."""
    return ast.parse(path.read_text(), str(path))


@functools.cache
def imports(path: Path) -> list[tuple[str, str, int]]:
    """(module imported, name imported from it or "", line) for every import in `path`."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found += [(base, alias.name, node.lineno) for alias in node.names]
    return found


def sources(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def all_modules() -> set[str]:
    return {module_name(p) for package in PACKAGES for p in sources(package)}


def resolve(target: str, name: str, known: set[str]) -> str:
    """The module an import brings in (`from pkg import mod` imports a module)."""
    return f"{target}.{name}" if f"{target}.{name}" in known else target


def layer_of(module: str) -> int | None:
    rest = module.removeprefix("ctxkeep.daemon").lstrip(".").split(".")[0]
    for index, (_, members) in enumerate(LAYERS):
        if rest in members:
            return index
    return None


def daemon_edges() -> list[tuple[str, str, str, int]]:
    known = all_modules()
    edges = []
    for path in sources("daemon"):
        for target, name, line in imports(path):
            if target.startswith("ctxkeep."):
                edges.append((module_name(path), resolve(target, name, known), name, line))
    return edges


def test_every_daemon_module_has_a_layer():
    unplaced = sorted({m for m in all_modules() if m.startswith("ctxkeep.daemon.")
                       and layer_of(m) is None})
    assert not unplaced, "place these in LAYERS (and the README's map): " + ", ".join(unplaced)


def test_no_import_reaches_up_a_layer():
    upward = []
    for source, target, _, line in daemon_edges():
        if not target.startswith("ctxkeep.daemon."):
            continue
        low, high = layer_of(source), layer_of(target)
        if low is not None and high is not None and high > low:
            upward.append(f"{source}:{line} ({LAYERS[low][0]}) imports {target} ({LAYERS[high][0]})")
    assert not upward, "\n".join(upward)


def test_the_top_level_packages_stand_apart():
    crossing = []
    for package, allowed in PACKAGES.items():
        for path in sources(package):
            for target, _, line in imports(path):
                if target.startswith("ctxkeep.") and not target.startswith(allowed):
                    crossing.append(f"{module_name(path)}:{line} imports {target}")
    assert not crossing, "\n".join(crossing)


def test_no_private_name_is_imported_across_modules():
    private = []
    for package in PACKAGES:
        for path in sources(package):
            for target, name, line in imports(path):
                if target.startswith("ctxkeep.") and name.startswith("_") and name != "__version__":
                    private.append(f"{module_name(path)}:{line} imports {target}.{name}")
    assert not private, "\n".join(private)


def test_no_import_loop():
    graph: dict[str, set[str]] = defaultdict(set)
    known = all_modules()
    for package in PACKAGES:
        for path in sources(package):
            source = module_name(path)
            for target, name, _ in imports(path):
                target = resolve(target, name, known)
                if target in known and target != source:
                    graph[source].add(target)
    loops = _cycles(graph)
    assert loops == [], "modules that import each other: " + "; ".join(" -> ".join(c) for c in loops)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_files_and_functions_stay_small(package):
    """No file over 300 lines; no function over 60."""
    large = []
    for path in sources(package):
        text = path.read_text()
        if text.count("\n") > 300:
            large.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > 60:
                    large.append(f"{path.relative_to(ROOT)}: {node.name} is {length} lines")
    assert not large, "\n".join(large)


def test_the_readme_maps_the_same_layers_in_the_same_order():
    """The README's table of layers names each layer of LAYERS, in order, with its members."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("| layer | where | what |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:3] for line in table.strip().splitlines()[1:]]
    assert [name.strip() for name, _ in rows] == [name for name, _ in LAYERS]
    for (name, where), (_, members) in zip(rows, LAYERS):
        for member in members:
            assert f"`{member}" in where, f"README: the {name} layer should name {member}"


def test_every_package_is_installed():
    """pyproject.toml lists every package folder (a missing one is absent from a wheel)."""
    listed = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for package in PACKAGES:
        for init in (ROOT / package).rglob("__init__.py"):
            name = module_name(init)
            assert f'"{name}"' in listed, f"pyproject.toml: add {name} to packages"
