"""Changing one top-level key of config.toml in place (`models.default`), keeping the rest
of the file as the user wrote it: comments, order, tables."""

import os
import re
import tempfile
from pathlib import Path

import msgspec

from ctxkeep.daemon.config.settings import load

_TABLE = re.compile(r"^\s*\[")


def set_top_level(path: Path, key: str, value: object) -> None:
    """Set `key = value` among the file's top-level keys (replacing the line that sets it,
    else adding one before the first table), check the result loads, and replace the file
    atomically: a crash leaves the old file or the new one, never half of one."""
    line = f"{key} = {msgspec.json.encode(value).decode()}\n"  # JSON strings are TOML strings
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = old.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    setting = re.compile(rf"^\s*{re.escape(key)}\s*=")
    at = next((i for i, text in enumerate(lines) if _TABLE.match(text)), len(lines))
    found = next((i for i in range(at) if setting.match(lines[i])), None)
    if found is None:
        while at > 0 and not lines[at - 1].strip():  # with the other keys, not the table
            at -= 1
        lines.insert(at, line)
    else:
        lines[found] = line
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())
        load(Path(tmp))  # never leave a file that would stop the next start
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)

