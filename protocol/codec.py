"""JSON encoding and validated decoding of frames.

Untrusted input is only ever decoded into typed Structs. Failures become a
:class:`DecodeFailure` that names the problem and carries the request `id` when
one could be read, so the daemon can answer it.
"""

import re
from collections.abc import Sequence

import msgspec

from . import events, replies, requests
from .errors import ErrorCode
from .version import PROTOCOL_VERSION
from .wording import in_words

#: The largest frame the daemon accepts or sends (configurable in the daemon): room for an
#: image of max_image_bytes (5 MiB) as base64.
DEFAULT_MAX_FRAME_BYTES = 8 << 20

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(requests.AnyRequest)
_reply_decoder = msgspec.json.Decoder(replies.AnyReply)
_event_decoder = msgspec.json.Decoder(events.AnyEvent)
_EVENT_TYPES = {requests.tag_of(c) for c in events.ALL}


class _Head(msgspec.Struct):
    """The fields read before full validation, to route and answer a frame."""

    type: str = ""
    id: str = ""
    v: int = 0


_head_decoder = msgspec.json.Decoder(_Head)


class DecodeFailure(Exception):
    """A frame that cannot be accepted, with the error code and the request id if known."""

    def __init__(self, code: ErrorCode, message: str, request_id: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


def encode(message: msgspec.Struct | Sequence[msgspec.Struct]) -> bytes:
    """A Struct (or a list of them) as one JSON frame."""
    return _encoder.encode(message)


def _head(frame: bytes, max_bytes: int) -> _Head:
    if not frame:
        raise DecodeFailure(ErrorCode.BAD_FRAME, "empty frame: send one JSON object")
    if len(frame) > max_bytes:
        raise DecodeFailure(
            ErrorCode.FRAME_TOO_LARGE,
            f"frame of {len(frame):,} bytes is over the limit of {max_bytes:,} bytes",
        )
    if too_deep(frame):
        raise DecodeFailure(ErrorCode.BAD_JSON, f"JSON nested deeper than {MAX_DEPTH} levels: "
                                                "flatten the request")
    try:
        return _head_decoder.decode(frame)
    except (msgspec.DecodeError, ValueError, RecursionError) as exc:  # ValidationError included
        if _is_json_object(frame):  # an object whose `type`, `id` or `v` is mistyped
            raise DecodeFailure(ErrorCode.INVALID_REQUEST, f"invalid request: {exc}",
                                _lenient_id(frame)) from None
        raise DecodeFailure(ErrorCode.BAD_JSON, f"not a JSON object: {exc}") from None


def _is_json_object(frame: bytes) -> bool:
    """Whether a frame that failed to decode is UTF-8 JSON whose top level is an object.

    Decided here, after a failure only, so which error code a frame gets never depends on
    how a decoder version words or classes its exceptions (msgspec 0.23 reports invalid
    UTF-8 inside a string as a validation error of a typed decode)."""
    try:
        frame.decode("utf-8")
        return isinstance(msgspec.json.decode(frame), dict)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return False


#: The deepest nesting of arrays and objects a frame may have (requests need 4).
MAX_DEPTH = 64
#: A JSON string, its escapes included. Possessive (`++`, `*+`): a string left open must fail
#: in one pass — with backtracking, one open string of 70 characters took longer than a day.
_STRINGS = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def too_deep(frame: bytes) -> bool:
    """Whether arrays and objects nest deeper than MAX_DEPTH (checked before decoding, so
    the decoder never recurses past what the interpreter allows)."""
    if frame.count(b"[") + frame.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b"", frame)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > MAX_DEPTH:
            return True
    return False


class _AnyId(msgspec.Struct):
    """The request id, when the envelope's other fields are mistyped."""

    id: str = ""


_id_decoder = msgspec.json.Decoder(_AnyId)


def _lenient_id(frame: bytes) -> str:
    try:
        return _id_decoder.decode(frame).id
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return ""


def decode_request(frame: bytes, max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> requests.Request:
    """Validate one control frame as a request, or raise DecodeFailure."""
    head = _head(frame, max_bytes)
    if head.v > PROTOCOL_VERSION:
        raise DecodeFailure(
            ErrorCode.UNSUPPORTED_VERSION,
            f"this daemon speaks protocol {PROTOCOL_VERSION}, the request uses {head.v}: "
            "upgrade ctxkeepd or use an older client",
            head.id,
        )
    if not head.type:
        raise DecodeFailure(ErrorCode.INVALID_REQUEST, "the request has no `type` field: every "
                                                       "request names its type", head.id)
    if head.type not in requests.TYPES:
        known = ", ".join(sorted(requests.TYPES))
        raise DecodeFailure(
            ErrorCode.UNKNOWN_TYPE,
            f"unknown request type {head.type!r}; known types: {known}",
            head.id,
        )
    try:
        return _request_decoder.decode(frame)
    except (msgspec.DecodeError, ValueError) as exc:  # ValidationError included
        if not _is_json_object(frame):
            raise DecodeFailure(ErrorCode.BAD_JSON, f"not UTF-8 JSON: {exc}", head.id) from None
        raise DecodeFailure(
            ErrorCode.INVALID_REQUEST, f"invalid {head.type!r} request: {in_words(str(exc))}", head.id
        ) from None


def decode_reply(frame: bytes) -> replies.Reply:
    """Decode a reply from the daemon (raises msgspec errors on garbage)."""
    return _reply_decoder.decode(frame)


def decode_event(frame: bytes) -> events.Event | None:
    """Decode an event body; None for an event type this client does not know."""
    head = _head_decoder.decode(frame)
    if head.type not in _EVENT_TYPES:
        return None
    return _event_decoder.decode(frame)

