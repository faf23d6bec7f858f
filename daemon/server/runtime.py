"""The socket folder and the single-instance lock.

A second process binding the same ipc:// path would silently take it over, so
the daemon holds an exclusive flock on `<socket folder>/ctxkeepd.lock` (holding
its pid) before it binds, and removes stale socket files left by a crash. `Claim`
is all a running daemon holds on the machine this way, taken at start and given back
at its stop.
"""

import fcntl
import os
import stat
from pathlib import Path

from ctxkeep.daemon.server import systemd
from ctxkeep.daemon.store.errors import StoreError
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


#: The names systemd's socket units give the daemon's ZeroMQ sockets, in endpoint order.
SOCKET_NAMES = ("ctl", "events")


class Claim:
    """What one running daemon holds on the machine: the socket folder's lock (and so its
    socket files, removed at release unless systemd made them), the store's lock, and the
    sockets systemd opened for it. Given back whole however far `take` got."""

    def __init__(self, endpoints: list[str]) -> None:
        self.endpoints = endpoints
        #: The file descriptors systemd passed (ctxkeep-*.socket), by name: "ctl", "events", "http".
        self.adopted: dict[str, int] = {}
        self._lock: InstanceLock | None = None
        self._store_lock: InstanceLock | None = None

    def take(self, store_path: Path) -> None:
        """Check the endpoints, adopt systemd's sockets, prepare the socket folder, take
        its lock (removing a crash's stale sockets), then the store's (its folder made).
        Raises on any obstacle, holding what it took until `release`."""
        for endpoint in self.endpoints:
            check_endpoint(endpoint)
        self.adopted = systemd.listen_fds()
        folders = {p.parent for p in map(ipc_path, self.endpoints) if p is not None}
        for folder in folders:
            prepare_folder(folder)
        if folders:
            lock = InstanceLock(min(folders))
            lock.acquire([e for e, name in zip(self.endpoints, SOCKET_NAMES) if name not in self.adopted])
            self._lock = lock  # only now are the socket files ours to remove
        try:
            store_path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {store_path}: {exc.strerror}: "
                             "choose another with store_path in config.toml") from None
        self._store_lock = InstanceLock(store_path, f"with the store {store_path}")
        self._store_lock.acquire([])

    def protect(self) -> None:
        """The bound socket files readable and writable by the user alone."""
        for endpoint in self.endpoints:
            path = ipc_path(endpoint)
            if path is not None and path.exists():
                path.chmod(0o600)

    def release(self) -> None:
        """Remove our socket files (not systemd's), then let go of both locks."""
        if self._lock is not None:
            for endpoint, name in zip(self.endpoints, SOCKET_NAMES):
                path = ipc_path(endpoint)
                if path is not None and path.exists() and name not in self.adopted:
                    path.unlink()
            self._lock.release()
            self._lock = None
        if self._store_lock is not None:
            self._store_lock.release()
            self._store_lock = None
