"""The bearer token HTTP clients send over TCP: made once, kept 0600 in the config folder
(`paths.http_token_path()`). The daemon makes it when it first serves TCP; `ctxkeep daemon
install --http` makes it beforehand, so the client that starts a socket-activated daemon
already has it."""

import os
import secrets
from pathlib import Path


def exposed(path: Path) -> bool:
    """Whether the token file exists and other users may read or change it."""
    try:
        return bool(path.stat().st_mode & 0o077)
    except FileNotFoundError:
        return False


def read_or_make(path: Path) -> str:
    """The token in `path`, written there first (0600, its folder 0700) if there is none, or
    if the one there could be read by other users (it is replaced: they may know it)."""
    if exposed(path):
        path.unlink(missing_ok=True)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = secrets.token_urlsafe(32)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made meanwhile by another process: that one counts
        return path.read_text().strip()
    with os.fdopen(descriptor, "w") as out:
        out.write(value + "\n")
    return value
