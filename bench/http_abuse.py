"""The HTTP front door under abuse, with another client's ping beside it (issue 39).

    python bench/http_abuse.py [--only NAME] [--connections 1100]

ctxkeepd in a process of its own, on the stand-in, listening on loopback TCP without a
token. Each scenario runs while a second client pings the daemon over ZeroMQ every 10 ms;
its p99 is reported beside the same client's p99 on the idle daemon, measured in the same
run (the baseline). Goal: ping p99 ≤ 50 ms on a quiet machine while any one request is
handled, and the daemon alive after every scenario.

- connections: `--connections` sockets opened to the front door and held idle (past the
  cap they are told 503 and closed; idle ones are closed after `http_idle_timeout`);
- messages_100k: one /api/chat carrying 100,000 short messages (about 3 MB; refused: over
  http_max_messages);
- messages_10k: 9,999 messages (within it);
- message_30mb: one 30 MB message (refused: over http_max_body_bytes), message_7mb: one of
  7 MB (refused: it cannot fit the window);
- generate_30mb, generate_7mb: /api/generate prompts of those sizes (refused: over the window);
- schema_bomb: a format whose pattern backtracks without end, and a self-referring one;
- deep_json: a body nested 100,000 levels.
"""

import argparse
import http.client
import json
import multiprocessing
import socket
import time

from common import daemon_for, emit, free_port, percentiles, standin_process  # (puts tests/ on the path)

MODEL = "qwen2.5:7b"


def _ping(control: str, events: str, stop, out) -> None:
    """In a process of its own (the abuse's own work must not delay the pings): ping every
    10 ms until `stop`, then send (samples, errors) through `out`."""
    from ctxkeep.clients import Client
    samples, errors = [], 0
    with Client(control, events, timeout=60) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                c.ping()
                samples.append(time.perf_counter() - t0)
            except Exception:  # counted
                errors += 1
            time.sleep(0.01)
    out.send((samples, errors))


class Pinger:
    """Another client pinging the daemon every 10 ms, in a process of its own; `samples` are
    its round trips."""

    def __init__(self, daemon) -> None:
        self.daemon, self.samples, self.errors = daemon, [], 0
        self._stop = multiprocessing.Event()
        self._ours, theirs = multiprocessing.Pipe()
        self._process = multiprocessing.Process(target=_ping, args=(daemon.control, daemon.events,
                                                                    self._stop, theirs), daemon=True)

    def __enter__(self) -> "Pinger":
        self._process.start()
        time.sleep(0.3)  # connected and pinging before the abuse starts
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.samples, self.errors = self._ours.recv()
        self._process.join(70)


def post(port: int, path: str, body: bytes, timeout: float = 600) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode(errors="replace")
    connection.close()
    return response.status, text[:160]


def chat(messages: list[dict], **extra) -> bytes:
    return json.dumps({"model": MODEL, "stream": False, "messages": messages, **extra}).encode()


def scenarios(port: int, connections: int) -> dict:
    def held() -> tuple[int, str]:
        socks, refused = [], 0
        for _ in range(connections):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                socks.append(s)
            except OSError:
                refused += 1
        time.sleep(1.0)
        told = 0
        for s in socks:
            s.settimeout(0.01)
            try:
                told += s.recv(64).startswith(b"HTTP/1.1 503")
            except OSError:
                pass
        for s in socks:
            s.close()
        return 200, f"{len(socks)} opened, {told} told 503, {refused} not opened"

    many = lambda n: chat([{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
                           for i in range(n)] + [{"role": "user", "content": "and now?"}][: 1 if n % 2 == 0 else 0])
    bodies = {  # made before the measure starts: the client's own work is not the daemon's
        "messages_10k": ("/api/chat", lambda: many(9_998)),
        "messages_100k": ("/api/chat", lambda: many(100_000)),
        "message_30mb": ("/api/chat", lambda: chat([{"role": "user", "content": "word " * 6_000_000}])),
        "message_7mb": ("/api/chat", lambda: chat([{"role": "user", "content": "word " * 1_400_000}])),
        "generate_7mb": ("/api/generate", lambda: json.dumps(
            {"model": MODEL, "prompt": "word " * 1_400_000, "stream": False}).encode()),
        "generate_30mb": ("/api/generate", lambda: json.dumps(
            {"model": MODEL, "prompt": "word " * 6_000_000, "stream": False}).encode()),
        "schema_bomb": ("/api/chat", lambda: chat([{"role": "user", "content": "a" * 60 + "b"}], format={
            "type": "object", "properties": {"a": {"type": "string", "pattern": "(a|aa)+$"}}})),
        "self_ref": ("/api/chat", lambda: chat([{"role": "user", "content": "x"}], format={"$ref": "#"})),
        "deep_json": ("/api/chat", lambda: b'{"model": "m", "messages": [{"role": "user", "content": "x", "x": '
                      + b"[" * 100_000 + b"]" * 100_000 + b"}]}"),
    }

    def sender(path: str, make) -> tuple:
        body = make()
        return lambda: post(port, path, body)
    return {"connections": lambda: held, **{name: lambda p=path, m=make: sender(p, m)
                                           for name, (path, make) in bodies.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run one scenario")
    parser.add_argument("--connections", type=int, default=1100)
    args = parser.parse_args()
    port = free_port()
    with standin_process() as url, daemon_for(url, f'http_listen = "127.0.0.1:{port}"\nhttp_auth = "none"\n'
                                                   "http_idle_timeout = 5.0\n") as daemon:
        with Pinger(daemon) as idle:
            time.sleep(2)
        emit(scenario="baseline_idle", ping=percentiles(idle.samples))
        for name, prepare in scenarios(port, args.connections).items():
            if args.only and name != args.only:
                continue
            run = prepare()
            with Pinger(daemon) as pinger:
                t0 = time.perf_counter()
                try:
                    status, said = run()
                except Exception as exc:  # reported
                    status, said = 0, repr(exc)[:160]
                took = time.perf_counter() - t0
            alive = daemon.proc.poll() is None
            emit(scenario=name, status=status, seconds=round(took, 2), said=said, alive=alive,
                 ping=percentiles(pinger.samples or [0.0]), ping_errors=pinger.errors,
                 ping_p99_goal_ms=50, met=alive and percentiles(pinger.samples or [0.0])["p99_us"] <= 50_000)
            if not alive:
                break


if __name__ == "__main__":
    main()
