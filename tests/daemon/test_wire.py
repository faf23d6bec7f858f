"""Malformed input at socket level: each gets an error reply, and the daemon keeps serving."""

import json
import time

import pytest
import zmq

from ctxkeep.protocol import PROTOCOL_VERSION
from ctxkeep.protocol.events import SessionCreated


@pytest.fixture
def raw(daemon):
    """A bare DEALER on the control socket, as a client in any language would have."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(daemon.control)
    yield sock
    sock.close()
    ctx.term()


def exchange(sock, *frames: bytes) -> dict:
    sock.send_multipart(list(frames))
    assert sock.poll(5000), "no reply"
    reply = sock.recv_multipart()
    assert len(reply) == 1
    return json.loads(reply[0])


def still_serving(sock) -> None:
    assert exchange(sock, b'{"type": "ping", "id": "alive"}')["type"] == "pong"


@pytest.mark.parametrize("frame, code", [
    (b"this is not json", "bad_json"),
    (b'["a", "list"]', "bad_json"),
    (b"\xff\xfe\xfd", "bad_json"),
    (b'{"type": "session.get", "id": "u", "session": "\xff\xfe"}', "bad_json"),
    (b'{"type": "no.such.thing", "id": "t"}', "unknown_type"),
    (b'{"id": "no type"}', "invalid_request"),  # a missing field, as the protocol doc says
    (b'{"type": "session.get", "id": "w", "session": 42}', "invalid_request"),
    (b'{"type": "session.create", "id": "w", "num_ctx": "big"}', "invalid_request"),
    (b'{"type": "history", "id": "w", "session": "x", "limit": -1}', "invalid_request"),
    (b'{"type": "ping", "id": 7}', "invalid_request"),
    (b'{"type": "ping", "id": "f", "unexpected": true}', "invalid_request"),
    (b'{"type": "send", "id": "m"}', "invalid_request"),
    (b'{"type": "ping", "id": "n", "v": 99}', "unsupported_version"),
    (b"", "bad_frame"),
])
def test_malformed_frame_gets_error_reply(raw, frame, code):
    reply = exchange(raw, frame)
    assert reply["type"] == "error"
    assert reply["code"] == code
    assert reply["message"]
    assert reply["v"] == PROTOCOL_VERSION
    still_serving(raw)


def test_error_reply_echoes_the_request_id(raw):
    reply = exchange(raw, b'{"type": "session.get", "id": "abc-123", "session": 5}')
    assert reply["id"] == "abc-123"
    assert reply["message"] == "invalid 'session.get' request: `session` must be text, not a whole number"


def test_oversize_frame(raw):
    frame = json.dumps({"type": "ping", "id": "big", "pad": "x" * (9 << 20)}).encode()
    reply = exchange(raw, frame)
    assert reply["code"] == "frame_too_large"
    still_serving(raw)


def test_extra_frames(raw):
    reply = exchange(raw, b'{"type": "ping", "id": "1"}', b'{"type": "ping", "id": "2"}')
    assert reply["code"] == "bad_frame" and "got 2" in reply["message"]
    reply = exchange(raw, b"a", b"b", b"c")
    assert reply["code"] == "bad_frame"
    still_serving(raw)


def test_req_socket_envelope_is_understood(daemon):
    ctx = zmq.Context()
    req = ctx.socket(zmq.REQ)
    req.setsockopt(zmq.LINGER, 0)
    req.connect(daemon.control)
    req.send(b'{"type": "ping", "id": "from-req"}')
    assert req.poll(5000)
    assert json.loads(req.recv())["id"] == "from-req"
    req.close()
    ctx.term()


def test_pipelined_requests_are_all_answered(raw):
    for i in range(100):
        raw.send(json.dumps({"type": "ping", "id": str(i)}).encode())
    ids = set()
    for _ in range(100):
        assert raw.poll(5000)
        ids.add(json.loads(raw.recv())["id"])
    assert ids == {str(i) for i in range(100)}


def test_a_vanished_client_does_not_block_the_daemon(daemon, raw):
    ctx = zmq.Context()
    gone = ctx.socket(zmq.DEALER)
    gone.setsockopt(zmq.LINGER, 0)
    gone.connect(daemon.control)
    gone.send(b'{"type": "session.list", "id": "x"}')
    gone.close()  # leaves before its reply
    ctx.term()
    still_serving(raw)


def test_new_subscriber_is_greeted_with_status(daemon):
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(daemon.events)
    sub.subscribe(b"daemon.status")
    assert sub.poll(5000)
    topic, body = sub.recv_multipart()
    event = json.loads(body)
    assert topic == b"daemon.status" and event["type"] == "daemon.status"
    assert event["seq"] >= 1 and event["status"]["protocol"] == PROTOCOL_VERSION
    sub.close()
    ctx.term()


def test_every_subscriber_is_greeted_when_clients_come_and_go_at_once(daemon):
    """A manual XPUB applies a subscription to the connection it read last; a departed
    subscriber's end, processed between that read and the subscription, used to make it
    go nowhere (no greeting, no events). Clients one after another, as a script's
    `ctxkeep ask` in a loop are: each must be greeted, and must get the events it asked for."""
    for i in range(40):
        with daemon.client(timeout=5) as c:
            c.subscribe("session.")
            sid = c.create_session(model="qwen2.5:7b", name=f"churn{i}").session.id
            deadline = time.monotonic() + 5
            while True:  # its session.created, after any other event that came first
                item = c.next_event(timeout=max(0.0, deadline - time.monotonic()))
                assert item is not None, f"client {i} got no session.created within 5 s"
                if isinstance(item[1], SessionCreated) and item[1].session_id == sid:
                    break
