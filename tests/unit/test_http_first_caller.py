"""The front door opens on its first caller (transports/http/first_caller.py): nothing is
opened while no client connects, the first connection on any listener opens it once, and
that client is served by what opened."""

import asyncio
import socket
from pathlib import Path

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.transports.http.first_caller import OnFirstCaller
from ctxkeep.daemon.transports.http.listeners import Listeners


class Server:
    """A door that serves every listener with a one-word answer once opened."""

    def __init__(self, http: Listeners) -> None:
        self.http, self.opened, self.closed = http, 0, 0
        self.servers: list[asyncio.Server] = []

    async def open(self) -> "Server":
        self.opened += 1
        await asyncio.sleep(0.05)  # as an import in a thread takes its time

        async def answer(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            w.write(b"served")
            await w.drain()
            w.close()
        self.servers = [await asyncio.start_server(answer, sock=s) for s in self.http.sockets()]
        return self

    async def close(self) -> None:
        self.closed += 1
        for server in self.servers:
            server.close()


def bound(tmp: Path) -> Listeners:
    http = Listeners(Config(http_listen="127.0.0.1:0", http_auth="none"), tmp / "http.sock", tmp / "http.token")
    http.bind()
    return http


def test_the_door_opens_once_for_its_first_callers_and_serves_them(short_tmp):
    http = bound(short_tmp)
    host, port = http.listen.rsplit(":", 1)

    async def scenario() -> tuple[list[bytes], int, int]:
        door = Server(http)
        watch = OnFirstCaller(http, door.open)
        watch.watch()
        await asyncio.sleep(0.1)
        assert door.opened == 0  # nobody called yet
        calls = [asyncio.open_connection(host, int(port)), asyncio.open_unix_connection(str(http.socket_path)),
                 asyncio.open_connection(host, int(port))]
        answers = []
        for reader, writer in [await c for c in calls]:
            answers.append(await asyncio.wait_for(reader.read(), 10))
            writer.close()
        await watch.close()
        return answers, door.opened, door.closed
    try:
        assert asyncio.run(scenario()) == ([b"served"] * 3, 1, 1)
    finally:
        http.close()


def test_a_door_nobody_called_is_never_opened(short_tmp):
    http = bound(short_tmp)

    async def scenario() -> int:
        door = Server(http)
        watch = OnFirstCaller(http, door.open)
        watch.watch()
        await asyncio.sleep(0.05)
        await watch.close()
        with socket.create_connection(("127.0.0.1", int(http.listen.rsplit(":", 1)[1]))):
            await asyncio.sleep(0.05)  # a caller after the close: nothing watches any more
        return door.opened
    try:
        assert asyncio.run(scenario()) == 0
    finally:
        http.close()


def test_a_door_that_fails_to_open_is_told_and_its_callers_are_refused(short_tmp, caplog):
    http = bound(short_tmp)

    async def broken() -> Server:
        raise ImportError("no module named aiohttp")

    async def scenario() -> bytes:
        watch = OnFirstCaller(http, broken)
        watch.watch()
        reader, writer = await asyncio.open_unix_connection(str(http.socket_path))
        try:  # refused once the door failed (left in the backlog, it would wait out the 5 s)
            return await asyncio.wait_for(reader.read(), 5)
        except ConnectionResetError:
            return b""
        finally:
            await watch.close()
            writer.close()
    try:
        assert asyncio.run(scenario()) == b""
    finally:
        http.close()
    assert "the HTTP front door could not open: no module named aiohttp" in caplog.text
    assert not http.socket_path.exists() and http.sockets() == []
