"""The protocol package: codec, handler coverage, and the generated documents."""

from pathlib import Path

import msgspec
import pytest

from ctxkeep.daemon.handlers import HANDLERS
from ctxkeep.protocol import (
    DecodeFailure,
    ErrorCode,
    decode_event,
    decode_reply,
    decode_request,
    docgen,
    encode,
    events,
    replies,
    requests,
    schema,
    subjects,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_request_type_has_a_handler():
    assert set(HANDLERS) == set(requests.ALL)


def test_every_request_type_has_a_worked_example():
    assert set(docgen.EXAMPLES) == set(requests.ALL)


@pytest.mark.parametrize("cls", requests.ALL, ids=lambda c: requests.tag_of(c))
def test_examples_round_trip(cls):
    request, reply, follow = docgen.EXAMPLES[cls]
    assert decode_request(encode(request)) == request
    assert decode_reply(encode(reply)) == reply
    for event in follow:
        assert decode_event(encode(event)) == event


def test_protocol_md_matches_the_code():
    assert (DOCS / "protocol.md").read_text(encoding="utf-8") == docgen.render_markdown(), \
        "docs/protocol.md is stale: run `python -m ctxkeep.protocol.docgen docs/`"


def test_schema_matches_the_code():
    assert (DOCS / "protocol.schema.json").read_text(encoding="utf-8") == schema.render_schema(), \
        "docs/protocol.schema.json is stale: run `python -m ctxkeep.protocol.docgen docs/`"


def test_event_subjects_are_the_seed_names():
    tags = {requests.tag_of(c) for c in events.ALL}
    for name in ("query.received", "generation.token", "generation.thinking",
                 "response.generation", "generation.error", "context.usage", "daemon.status",
                 "session.created", "session.updated", "session.deleted"):
        assert name in tags
    assert subjects.topic("generation.token", "abc") == "generation.token/abc"
    assert subjects.topic("daemon.status") == "daemon.status"
    assert subjects.split_topic("generation.token/abc") == ("generation.token", "abc")


def test_unknown_event_types_are_skipped():
    assert decode_event(b'{"type": "future.thing", "seq": 3, "whatever": [1, 2]}') is None


def test_event_with_new_fields_still_decodes():
    frame = b'{"type": "generation.token", "seq": 1, "generation_id": "g", "index": 0, "text": "x", "new_field": 1}'
    assert isinstance(decode_event(frame), events.GenerationToken)


def test_integers_are_bounded():
    with pytest.raises(DecodeFailure) as err:
        decode_request(b'{"type": "history", "session": "s", "start": 9007199254740993}')
    assert err.value.code == ErrorCode.INVALID_REQUEST


def test_size_cap_is_checked_before_parsing():
    with pytest.raises(DecodeFailure) as err:
        decode_request(b'{"type": "ping"}' + b" " * 2000, max_bytes=1024)
    assert err.value.code == ErrorCode.FRAME_TOO_LARGE


def test_protocol_imports_no_daemon_client_or_zmq():
    root = Path(requests.__file__).parent
    for source in root.glob("*.py"):
        text = source.read_text()
        for forbidden in ("import zmq", "from zmq", ".daemon", ".clients", "import lmdb"):
            assert forbidden not in text, f"{source.name} imports {forbidden}"


def test_clients_import_only_protocol():
    root = Path(requests.__file__).parent.parent / "clients"
    for source in root.rglob("*.py"):
        imports = [line for line in source.read_text().splitlines()
                   if line.startswith(("import", "from"))]
        assert not [line for line in imports if "ctxkeep.daemon" in line or "..daemon" in line
                    or "...daemon" in line], source


def test_reply_error_shape():
    frame = encode(replies.Error(id="x", code="bad_json", message="m"))
    assert msgspec.json.decode(frame) == {"type": "error", "code": "bad_json", "message": "m",
                                          "id": "x", "v": 1}


@pytest.mark.parametrize("message, said", [
    ("Expected `int` >= 256 - at `$.num_ctx`", "`num_ctx` must be at least 256"),
    ("Expected `float` <= 1.0 - at `$.thresholds[1]`", "`thresholds[1]` must be at most 1"),
    ("Expected `float` > 0.0 - at `$.f`", "`f` must be more than 0"),
    ("Expected `str` of length >= 1 - at `$.text`", "`text` must not be empty"),
    ("Expected `str` of length <= 200 - at `$.reason`", "`reason` must have at most 200 characters"),
    ("Expected `array` of length >= 3 - at `$.thresholds`", "`thresholds` must have at least 3 items"),
    ("Expected `int`, got `str` - at `$.num_ctx`", "`num_ctx` must be a whole number, not text"),
    ("Expected `int`, got `str` - at `$.options[...]`", "`options` must be a whole number, not text"),
    ("Object missing required field `session`", "`session` is missing"),
    ("Object missing required field `description` - at `$.goals.decisions[0]`",
     "`description` is missing in `goals.decisions[0]`"),
    ("Object contains unknown field `zz`", "`zz` is not a known field"),
    ("something msgspec may say one day", "something msgspec may say one day"),
])
def test_validation_messages_in_the_users_words(message, said):
    from ctxkeep.protocol.wording import in_words
    assert in_words(message) == said


def test_an_invalid_request_is_answered_in_the_users_words():
    with pytest.raises(DecodeFailure) as failure:
        decode_request(b'{"type":"session.create","id":"r","num_ctx":0}')
    assert failure.value.message == "invalid 'session.create' request: `num_ctx` must be at least 256"


def test_brackets_inside_strings_do_not_count_towards_a_frames_depth():
    """The depth guard skips strings, escaped quotes included: a message full of `\\"[`
    is text, not nesting; real nesting past MAX_DEPTH is refused before decoding."""
    import json

    from ctxkeep.protocol import ErrorCode
    from ctxkeep.protocol.codec import MAX_DEPTH, DecodeFailure, decode_request
    text = 'he typed \\"[[[\\" and ' + "[{" * 200
    frame = json.dumps({"type": "send", "id": "a", "session": "s", "text": text}).encode()
    assert decode_request(frame).text == text
    deep = b'{"type": "send", "id": "b", "session": "s", "tools": ' + b"[" * (MAX_DEPTH + 1) \
        + b"]" * (MAX_DEPTH + 1) + b"}"
    try:
        decode_request(deep)
    except DecodeFailure as exc:
        assert exc.code == ErrorCode.BAD_JSON and "deeper" in exc.message
    else:
        raise AssertionError("a frame nested past MAX_DEPTH was decoded")


def test_a_string_left_open_is_refused_at_once_not_backtracked_forever():
    """A frame cut inside a long string (here with brackets after it) was a day of regex
    backtracking in the depth guard, on the event loop: the daemon answered nothing more.
    The fuzz run of the HTTP front door found it (tests/http_fuzz.py)."""
    from ctxkeep.protocol import ErrorCode
    from ctxkeep.protocol.codec import DecodeFailure, decode_request, too_deep
    cut = b'{"type": "send", "id": "c", "session": "s", "text": "' + b"abcd\\u0000" * 50 + b"[" * 200
    assert too_deep(cut)  # what is left open is counted, conservatively
    with pytest.raises(DecodeFailure) as failure:
        decode_request(cut)
    assert failure.value.code == ErrorCode.BAD_JSON
