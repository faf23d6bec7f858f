"""Random control frames for fuzzing the daemon (tests/process/test_reliability.py, bench/fuzz.py):
raw bytes, requests of every real type with random fields of random types, and deep nesting."""

from __future__ import annotations

import json
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.protocol import requests

FIELDS = ["session", "text", "seq", "goals", "limit", "start", "options", "num_ctx", "snapshot_id",
          "v", "name", "model", "cwd", "dry_run", "tail_turns", "generation_id", "active"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                   st.text(max_size=40), st.lists(st.integers(), max_size=3),
                   st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))

FRAMES = st.one_of(
    st.binary(max_size=400),
    st.builds(lambda t, extra: json.dumps({"type": t, "id": "f", **extra}).encode(),
              st.sampled_from(sorted(requests.TYPES)),
              st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=5)),
    st.integers(1, 3000).map(lambda depth: b'{"type":"ping","x":' + b"[" * depth + b"]" * depth + b"}"),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


def check_reply(reply: dict) -> None:
    """A reply to a fuzzed frame: a typed reply, or an error with a code and a message."""
    assert isinstance(reply.get("type"), str)
    if reply["type"] == "error":
        assert reply["code"] and reply["message"]


def run(send: Callable[[bytes], None], examples: int) -> None:
    """Send `examples` random frames through `send` (which must check the reply)."""
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(FRAMES)
    def one(frame: bytes) -> None:
        send(frame)
    one()
