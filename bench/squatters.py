"""Tokenless TCP connections cannot lock the owner out (issue 59).

    python bench/squatters.py [--squatters 2000] [--requests 100]

ctxkeepd in a process of its own on the stand-in, its front door on loopback TCP with a
token (the default). Another local user opens `--squatters` idle TCP connections without
the token, and opens each again as soon as it is closed; meanwhile the owner sends
`--requests` requests over the Unix socket and as many over TCP with the token. Prints one
JSON line: connections the squatters held at the end, and the owner's requests served on
each path (goal: all of them).
"""

import argparse
import http.client
import socket
import threading
import time

from common import daemon_for, emit, free_port, standin_process, version_status  # (puts tests/ on the path)

from ctxkeep.protocol.paths import http_socket, http_token_path


class Squatters:
    """`n` idle connections to `port` without the token, each opened again once closed."""

    def __init__(self, port: int, n: int) -> None:
        self.port, self.n, self.stop = port, n, threading.Event()
        self.socks: list[socket.socket] = []
        self.reopened = 0
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _open(self) -> socket.socket | None:
        try:
            return socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            return None

    def _hold(self) -> None:
        self.socks = [s for s in (self._open() for _ in range(self.n)) if s]
        while not self.stop.is_set():
            for i, s in enumerate(self.socks):
                s.setblocking(False)
                try:
                    s.recv(64)  # told 503, or closed (b""): open it again
                    closed = True
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    s.close()
                    again = self._open()
                    if again:
                        self.socks[i], self.reopened = again, self.reopened + 1
            time.sleep(0.05)

    def __enter__(self) -> "Squatters":
        self.thread.start()
        while len(self.socks) < self.n * 0.9 and self.thread.is_alive():
            time.sleep(0.1)
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(30)
        for s in self.socks:
            s.close()


def unix_ok(path: str) -> bool:
    try:
        return version_status(path, timeout=10).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def token_ok(port: int, token: str) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/api/tags", headers={"Authorization": f"Bearer {token}"})
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--squatters", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    port = free_port()
    with standin_process() as url, daemon_for(url, f'http_listen = "127.0.0.1:{port}"\n') as daemon:
        token = http_token_path(daemon.env).read_text().strip()
        with Squatters(port, args.squatters) as squatters:
            unix = sum(unix_ok(str(http_socket(daemon.control))) for _ in range(args.requests))
            tcp = sum(token_ok(port, token) for _ in range(args.requests))
            held = len(squatters.socks)
        emit(bench="squatters", squatters=args.squatters, held=held, reopened=squatters.reopened,
             unix_served=unix, token_served=tcp, requests=args.requests,
             met=unix == tcp == args.requests)


if __name__ == "__main__":
    main()
