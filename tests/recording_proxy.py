"""A recording HTTP proxy between ctxkeepd and a real model server: every request passes
through unchanged (answers streamed back as they come), and each chat's request body and
the `usage` its answer reported (a whole answer's, or a streamed one's last event) are
kept, so a test checks ctxkeepd's counts against the server's own words."""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Exchange:
    """One chat request and what the server said of it."""

    body: dict[str, Any]
    status: int = 0
    usage: dict[str, Any] | None = None
    #: The answer's bytes, as the server sent them.
    raw: bytes = b""
    #: Seconds from the request to the answer's last byte.
    seconds: float = 0.0


@dataclass
class RecordingProxy:
    upstream: str
    exchanges: list[Exchange] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> "RecordingProxy":
        proxy = self
        target = urlsplit(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # ctxkeepd closed a kept-alive connection: nothing more to serve on it

            def _pass(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                started = time.monotonic()
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(method, self.path, body=raw or None, headers=headers)
                answer = conn.getresponse()
                exchange = None
                if self.path.endswith("/chat/completions"):
                    exchange = Exchange(json.loads(raw), answer.status)
                    proxy.exchanges.append(exchange)
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                seen = b""
                try:
                    while True:
                        piece = answer.read1(65536)
                        if not piece:
                            break
                        seen += piece
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    # ctxkeepd closed its connection (a turn stopped or cancelled): the server's
                    # is closed too, as a client's going away does to it, and the rest untold
                    self.close_connection = True
                finally:
                    conn.close()
                if exchange is not None:
                    exchange.usage, exchange.raw = usage_of(seen), seen
                    exchange.seconds = time.monotonic() - started

            def do_GET(self) -> None:
                self._pass("GET")

            def do_POST(self) -> None:
                self._pass("POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="recording-proxy").start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def usage_of(answer: bytes) -> dict[str, Any] | None:
    """The `usage` of an answer: a JSON object's, or the last SSE event's that has one."""
    text = answer.decode("utf-8", "replace").strip()
    if text.startswith("{"):
        try:
            return json.loads(text).get("usage")
        except json.JSONDecodeError:
            return None
    found = None
    for line in text.splitlines():
        if line.startswith("data: {"):
            event = json.loads(line[6:])
            found = event.get("usage") or found
    return found
