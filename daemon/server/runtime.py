"""The socket folder and the single-instance lock.

A second process binding the same ipc:// path would silently take it over, so
the daemon holds an exclusive flock on `<socket folder>/ctxkeepd.lock` (holding
its pid) before it binds, and removes stale socket files left by a crash.
"""

import fcntl
import os
import stat
from pathlib import Path

from ctxkeep.protocol.paths import IPC_PATH_MAX, ipc_path


class AlreadyRunning(Exception):
    """Another ctxkeepd holds the lock."""


class RuntimeDirError(Exception):
    """The socket folder cannot be used safely."""


def prepare_folder(folder: Path) -> None:
    """Create the socket folder mode 0700 and check it is ours."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise RuntimeDirError(f"{folder} belongs to another user: remove it or set XDG_RUNTIME_DIR")
    if stat.S_IMODE(info.st_mode) != 0o700:
        folder.chmod(0o700)


def check_endpoint(endpoint: str) -> None:
    """Refuse ipc:// paths the kernel cannot bind."""
    path = ipc_path(endpoint)
    if path is not None and len(str(path)) > IPC_PATH_MAX:
        raise RuntimeDirError(
            f"socket path {path} is {len(str(path))} characters, over the limit of "
            f"{IPC_PATH_MAX}: set XDG_RUNTIME_DIR to a shorter folder"
        )


class InstanceLock:
    """An exclusive flock that marks the one running daemon (of a socket folder, or of a
    store: two daemons with different socket folders must not share one store)."""

    def __init__(self, folder: Path, what: str = "") -> None:
        self.path = folder / "ctxkeepd.lock"
        self.what = what
        self._fd: int | None = None

    def acquire(self, endpoints: list[str]) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            where = self.what or f"on {', '.join(endpoints)}"
            raise AlreadyRunning(
                f"ctxkeepd is already running (pid {holder}) {where}: "
                f"stop it first (`systemctl --user stop ctxkeep` or `kill {holder}`)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        for endpoint in endpoints:  # stale sockets from a crash: we hold the lock, so ours
            path = ipc_path(endpoint)
            if path is not None and path.exists():
                path.unlink()

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None
