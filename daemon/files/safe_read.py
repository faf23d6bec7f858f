"""Reading a referenced file the way a daemon must: inside the allowed folders only.

The path is resolved against the client's working directory and must stay
inside an allowed root, both as written (no `..` escape) and as opened (the
real path of the open descriptor, so a symlink cannot lead out, nor can a
swap between check and open). Only regular files and directories; never
devices, FIFOs or sockets (opened non-blocking, so a FIFO cannot hang the
daemon); a size cap; binary files refused.
"""

import errno
import heapq
import os
import stat
from dataclasses import dataclass
from pathlib import Path


class Refused(Exception):
    """The file is not read; the message is the short note put in the prompt."""


@dataclass(frozen=True)
class ReadFile:
    """A file's text and what identifies this version of it."""

    path: Path
    text: str
    size: int
    mtime: float


@dataclass(frozen=True)
class Listing:
    """A directory's entries (name, is_dir, size)."""

    path: Path
    entries: list[tuple[str, bool, int]]
    total: int


def inside(path: Path, roots: list[Path]) -> bool:
    """Whether `path` is one of `roots` or below one."""
    return any(path == root or root in path.parents for root in roots)


def resolve(path_text: str, cwd: str, roots: list[str]) -> tuple[Path, list[Path]]:
    """The absolute path (lexically normalized) and the allowed roots (real paths)."""
    if not cwd:
        raise Refused("no working directory was sent with the message")
    base = Path(cwd)
    raw = Path(os.path.expanduser(path_text))
    path = Path(os.path.normpath(raw if raw.is_absolute() else base / raw))
    allowed = [Path(os.path.realpath(r)) for r in (roots or [cwd])]
    lexical_roots = [Path(os.path.normpath(r)) for r in (roots or [cwd])]
    if not (inside(path, allowed) or inside(path, lexical_roots)):
        raise Refused("outside the allowed folders")
    return path, allowed


def _open(path: Path, directory: bool) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        return os.open(path, flags | (os.O_DIRECTORY if directory else 0))
    except FileNotFoundError:
        raise Refused("no such file") from None
    except NotADirectoryError:
        raise Refused("not a directory") from None
    except PermissionError:
        raise Refused("not readable (permission denied)") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # what open() says of a Unix socket
            raise Refused("a socket, not a regular file") from None
        raise Refused(f"cannot be opened ({exc.strerror or exc})") from None


def _check_real(fd: int, allowed: list[Path]) -> Path:
    real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    if not inside(real, allowed):
        raise Refused("a link that leads outside the allowed folders")
    return real


def read_text(path_text: str, cwd: str, roots: list[str], max_bytes: int,
              fits_bytes: int = 0) -> ReadFile:
    """The text of a regular file inside the roots, or Refused; with `fits_bytes`, a file
    larger than that is refused as one that cannot fit the window, before it is read."""
    path, allowed = resolve(path_text, cwd, roots)
    fd = _open(path, directory=False)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused("a directory: write it with a trailing / for a listing")
        if not stat.S_ISREG(info.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise Refused(f"{kind}, not a regular file")
        real = _check_real(fd, allowed)
        if info.st_size > max_bytes:
            raise Refused(f"too large ({info.st_size:,} bytes; the limit is {max_bytes:,})")
        if fits_bytes and info.st_size > fits_bytes:
            raise Refused(f"{info.st_size:,} bytes cannot fit this session's window in full: "
                          f"ask for @{path_text}:summary (an outline) or @{path_text}:lines:A-B")
        chunks, left = [], max_bytes + 1
        try:
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as exc:
            raise Refused(f"not readable ({exc.strerror or exc})") from None
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise Refused(f"too large (over the limit of {max_bytes:,} bytes)")
        if b"\0" in data[:8192]:
            raise Refused("a binary file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("a binary file (not UTF-8 text)") from None
        return ReadFile(path=real, text=text, size=len(data), mtime=info.st_mtime)
    finally:
        os.close(fd)


def shown(name: str) -> str:
    """A file name as text that can be stored and sent: bytes that are not UTF-8 (which
    Python keeps as surrogates) become `\\xNN` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def list_dir(path_text: str, cwd: str, roots: list[str], limit: int = 200) -> Listing:
    """A directory's entries (hidden ones left out), or Refused."""
    path, allowed = resolve(path_text, cwd, roots)
    fd = _open(path, directory=True)
    try:
        real = _check_real(fd, allowed)
        found = []
        with os.scandir(fd) as it:
            for entry in it:
                if entry.name.startswith("."):
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                found.append((not is_dir, entry.name))
        # folders first, then by name; only the shown ones are stat'ed (a huge folder costs
        # a scan, not one stat per entry)
        entries = []
        for is_file, name in heapq.nsmallest(limit, found):
            try:
                size = os.stat(name, dir_fd=fd, follow_symlinks=False).st_size if is_file else 0
            except OSError:
                size = 0
            entries.append((shown(name), not is_file, size))
        return Listing(path=real, entries=entries, total=len(found))
    finally:
        os.close(fd)
