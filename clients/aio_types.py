"""Writes `aio.pyi`: the asyncio client's types, for type checkers and editors.

`AsyncClient` shares its request methods with the sync client (`calls.Calls`), where
they are typed as the sync client returns them; awaited, the asyncio client's return the
same. Python's types cannot say "R, or an awaitable of R, by subclass", so the stub says
it for each method: every `Calls` method as an `async def` with the same parameters and
reply type, beside `AsyncClient`'s own methods as `aio.py` writes them. It is written from
the two modules' source, not by hand; tests/unit/test_client_types.py keeps it current.

    python -m ctxkeep.clients.aio_types clients/aio.pyi
"""

import ast
import copy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: AsyncClient's public attributes (set in its __init__), with their types.
ATTRIBUTES = {"control": "str", "events_endpoint": "str", "timeout": "float", "gaps": "GapTracker",
              "daemon_identity": "tuple[int, float] | None"}


def _tree(name: str) -> ast.Module:
    return ast.parse((HERE / name).read_text(encoding="utf-8"))


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _generator(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether it yields (an async generator is typed as a plain `def` returning its iterator)."""
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(method))


def _stub(method: ast.FunctionDef | ast.AsyncFunctionDef, awaited: bool) -> str:
    """One method as a stub line (`awaited`: written as `async def`)."""
    coroutine = awaited or isinstance(method, ast.AsyncFunctionDef) and not _generator(method)
    kind = "async def" if coroutine else "def"
    returns = f" -> {ast.unparse(method.returns)}" if method.returns is not None else ""
    args = copy.deepcopy(method.args)  # defaults as `...`, as stubs write them
    args.defaults = [ast.Constant(...) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(...) for d in args.kw_defaults]
    doc = ast.get_docstring(method)
    body = f'\n        """{doc.splitlines()[0]}"""\n        ...' if doc else " ..."
    return f"    {kind} {method.name}({ast.unparse(args)}){returns}:{body}"


def _imports(trees: list[ast.Module], used: set[str]) -> list[str]:
    """The modules' imports of the names the stub uses, one line per module, sorted."""
    names: dict[str, dict[str, None]] = {}
    for node in (n for tree in trees for n in tree.body):
        if isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            names.setdefault(source, {}).update({a.name: None for a in node.names if a.name in used})
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in used:
                    names.setdefault("", {})[alias.name] = None
    plain = [f"import {name}" for name in sorted(names.pop("", {}))]
    return plain + [f"from {source} import {', '.join(sorted(chosen))}"
                    for source, chosen in sorted(names.items(), key=lambda kv: (kv[0].startswith("."), kv[0]))
                    if chosen]


def render() -> str:
    """The stub's text."""
    calls, aio = _tree("calls.py"), _tree("aio.py")
    client = _class(aio, "AsyncClient")
    own = [m for m in _methods(client) if not m.name.startswith("_") or m.name in (
        "__init__", "__aenter__", "__aexit__")]
    shared = [m for m in _methods(_class(calls, "Calls")) if m.name != "request"]
    body = ["class AsyncClient:", f'    """{ast.get_docstring(client)}"""', "",
            *(f"    {name}: {kind}" for name, kind in ATTRIBUTES.items()), "",
            *(_stub(m, False) for m in own), "",
            "    # -- the requests (calls.py), awaited --", "",
            *(_stub(m, True) for m in shared)]
    typevars = [n for n in aio.body if isinstance(n, ast.Assign)]
    used = {n.id for n in ast.walk(ast.parse("\n".join([*map(ast.unparse, typevars), *body])))
            if isinstance(n, ast.Name)}
    lines = ['"""The asyncio client\'s types: written by `python -m ctxkeep.clients.aio_types '
             'clients/aio.pyi`; do not edit."""', "", *_imports([calls, aio], used), "",
             *map(ast.unparse, typevars), "", "", *body]
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python -m ctxkeep.clients.aio_types PATH  (PATH: clients/aio.pyi)")
    Path(sys.argv[1]).write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
