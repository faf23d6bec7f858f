"""The front door's listeners, bound before any server: a client that connects meanwhile
waits in the backlog and is served once the server takes the socket."""

import asyncio
import socket
import stat
from pathlib import Path

import pytest

from ctxkeep.daemon.config import Config, ConfigError
from ctxkeep.daemon.transports.http.listeners import Listeners


def listeners(tmp: Path, **settings) -> Listeners:
    return Listeners(Config(**settings), tmp / "http.sock", tmp / "http.token")


async def served_after_connecting(sock: socket.socket, connect) -> bytes:
    """What a client that connected before any server gets once one serves `sock`."""
    reader, writer = await connect()  # nobody serves yet: the connection waits in the backlog
    async def answer(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"served")
        await w.drain()
        w.close()
    server = await asyncio.start_server(answer, sock=sock)
    try:
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
        server.close()


def test_a_client_connecting_before_the_server_starts_is_served(short_tmp):
    http = listeners(short_tmp, http_listen="127.0.0.1:0", http_auth="none")
    http.bind()
    try:
        assert stat.S_IMODE(http.socket_path.stat().st_mode) == 0o600
        host, port = http.listen.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0 and http.url == f"http://{http.listen}"
        assert asyncio.run(served_after_connecting(
            http.unix, lambda: asyncio.open_unix_connection(str(http.socket_path)))) == b"served"
        assert asyncio.run(served_after_connecting(
            http.tcp[0], lambda: asyncio.open_connection(host, int(port)))) == b"served"
    finally:
        http.close()
    assert not http.socket_path.exists()


def test_only_the_unix_socket_without_http_listen_and_a_stale_file_replaced(short_tmp):
    (short_tmp / "http.sock").write_text("left by a daemon that was killed")
    http = listeners(short_tmp)
    http.bind()
    try:
        assert http.tcp == [] and http.url == "" and http.token == ""
        assert [s.family for s in http.sockets()] == [socket.AF_UNIX]
    finally:
        http.close()


def test_a_busy_port_raises_and_leaves_no_socket_open(short_tmp):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        http = listeners(short_tmp, http_listen=f"127.0.0.1:{taken.getsockname()[1]}", http_auth="none")
        with pytest.raises(OSError):
            http.bind()
        http.close()
    assert not http.socket_path.exists()


def test_no_token_is_refused_off_loopback(short_tmp):
    with pytest.raises(ConfigError, match="refused on 0.0.0.0:11435"):
        listeners(short_tmp, http_listen="0.0.0.0:11435", http_auth="none")


def test_a_name_is_listened_on_at_every_address_it_has(short_tmp):
    http = listeners(short_tmp, http_listen="localhost:0", http_auth="none")
    http.bind()
    try:
        port = int(http.listen.rsplit(":", 1)[1])
        named = {a[4][:2] for a in socket.getaddrinfo("localhost", port, type=socket.SOCK_STREAM)}
        assert {s.getsockname()[:2] for s in http.tcp} == named
    finally:
        http.close()
