"""The systemd service protocol: readiness and watchdog notifications, and socket activation.

`notify()` sends datagrams to `$NOTIFY_SOCKET` (READY=1, STATUS=..., WATCHDOG=1,
STOPPING=1), a no-op when not run by systemd. `watchdog_interval()` reads
`$WATCHDOG_USEC`: the event loop pings at half that period, so a stuck loop
stops pinging and systemd restarts the service. `listen_fds()` adopts sockets
that systemd passes (`LISTEN_FDS`, named by `LISTEN_FDNAMES`).
"""

import os
import socket
from collections.abc import Mapping

SD_LISTEN_FDS_START = 3


def notify(*lines: str, env: Mapping[str, str] | None = None) -> bool:
    """Send `KEY=value` lines to systemd; False when there is no NOTIFY_SOCKET."""
    env = os.environ if env is None else env
    address = env.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        sock.connect(address)
        sock.sendall("\n".join(lines).encode())
    return True


def watchdog_interval(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WatchdogSec), or None when not asked."""
    env = os.environ if env is None else env
    usec = env.get("WATCHDOG_USEC")
    pid = env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 1_000_000 / 2


def listen_fds(env: Mapping[str, str] | None = None) -> dict[str, int]:
    """Sockets passed by systemd, by name (`LISTEN_FDNAMES`, else `fd3`, `fd4`, ...)."""
    env = os.environ if env is None else env
    if env.get("LISTEN_PID") != str(os.getpid()):
        return {}
    count = int(env.get("LISTEN_FDS", "0") or 0)
    names = (env.get("LISTEN_FDNAMES") or "").split(":")
    fds = {}
    for i in range(count):
        fd = SD_LISTEN_FDS_START + i
        name = names[i] if i < len(names) and names[i] else f"fd{fd}"
        os.set_inheritable(fd, False)
        fds[name] = fd
    return fds
