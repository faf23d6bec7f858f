"""The ctxkeep wire protocol: message types, subjects, codec, errors and paths.

This package does no I/O and imports no ZeroMQ: it is the contract that the
daemon and every client share, and `docs/protocol.md` is generated from it.
"""

from . import events, replies, requests, structs, subjects
from .codec import (
    DEFAULT_MAX_FRAME_BYTES,
    DecodeFailure,
    decode_event,
    decode_reply,
    decode_request,
    encode,
)
from .errors import ErrorCode
from .version import DAEMON_VERSION, PROTOCOL_VERSION

__all__ = [
    "PROTOCOL_VERSION",
    "DAEMON_VERSION",
    "ErrorCode",
    "DEFAULT_MAX_FRAME_BYTES",
    "DecodeFailure",
    "decode_event",
    "decode_reply",
    "decode_request",
    "encode",
    "events",
    "replies",
    "requests",
    "structs",
    "subjects",
]
