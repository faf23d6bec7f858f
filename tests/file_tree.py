"""A folder of small files of every kind that @file references read (Python, Markdown,
JSON, TOML, YAML, JavaScript, Go, ...), for the tests of files/ and of references sent."""

import json
from pathlib import Path

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


def write_tree(tmp_path: Path) -> Path:
    """Write the files into `tmp_path`; returns it."""
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
