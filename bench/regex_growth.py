"""How the time of every regular expression the package compiles grows with its text: each
is run (`finditer`, every start tried) over floods of blanks, newlines, letters, digits,
stops, another script and long sentences, at two lengths; one whose time grows more than
`--flag` times while the text grows 4 times is printed (a linear one grows ~4 times).

    python bench/regex_growth.py [--small 500] [--flag 8]

An expression flagged here may still be safe where it is used: anchored at one position
(`match`) or on a bounded slice. Each flagged one is to be looked at where it is called.
"""

import argparse
import importlib
import pkgutil
import random
import re
import time
from collections.abc import Iterator

from common import emit

import ctxkeep.clients
import ctxkeep.daemon
import ctxkeep.protocol

WORDS = "we decided the plan because however Alice March 3rd 4711 said going with that ok".split()


def patterns() -> dict[str, re.Pattern[str]]:
    """Every text pattern a module of the package holds at module level, by qualified name."""
    found: dict[str, re.Pattern[str]] = {}
    for package in (ctxkeep.daemon, ctxkeep.clients, ctxkeep.protocol):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            try:
                loaded = importlib.import_module(module.name)
            except ImportError:  # an optional part (the window without PySide6)
                continue
            for name, value in vars(loaded).items():
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                    found[f"{module.name}.{name}"] = value
    return found


def floods(n: int) -> Iterator[tuple[str, str]]:
    rng = random.Random(1)
    yield "long sentence", " ".join(rng.choice(WORDS) for _ in range(n // 6))
    yield "spaces", "a" + " " * n + "b"
    yield "newlines", "\n" * n
    yield "blank lines", " \n" * (n // 2)
    yield "letters", "a" * n
    yield "digits", "1" * n
    yield "stops", ". " * (n // 2)
    yield "another script", "é漢 " * (n // 3)
    yield "capitals", " ".join("Word" for _ in range(n // 5))


def seconds(pattern: re.Pattern[str], text: str) -> float:
    start = time.perf_counter()
    for _ in pattern.finditer(text):
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=500, help="the shorter texts' length (the longer: 4 times)")
    parser.add_argument("--flag", type=float, default=8.0, help="growth past which a pattern is printed")
    args = parser.parse_args()
    found = patterns()
    flagged = 0
    for name, pattern in found.items():
        for (kind, small), (_, large) in zip(floods(args.small), floods(4 * args.small)):
            a, b = seconds(pattern, small), seconds(pattern, large)
            if b > 0.002 and b / max(a, 1e-6) > args.flag:
                flagged += 1
                emit(bench="regex_growth", pattern=name, text=kind, small_ms=round(a * 1e3, 2),
                     large_ms=round(b * 1e3, 2), growth=round(b / max(a, 1e-6), 1))
                break
    emit(bench="regex_growth", patterns=len(found), flagged=flagged, lengths=[args.small, 4 * args.small])


if __name__ == "__main__":
    main()
