"""What both HTTP APIs share on the wire: bodies decoded into Structs (a clear 400 when
one is not what the API takes), timestamps, content types."""

import time
from typing import TypeVar

import msgspec

from ctxkeep.protocol import ErrorCode
from ctxkeep.daemon.transports.http.errors import HttpError

NDJSON = "application/x-ndjson"
T = TypeVar("T")


def decode_body(raw: bytes, kind: type[T]) -> T:
    """The JSON body as `kind`, or HttpError(400) that says what is wrong with it."""
    try:
        return msgspec.json.decode(raw or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        raise HttpError(ErrorCode.INVALID_REQUEST.value, f"invalid request: {exc}") from None
    except msgspec.DecodeError as exc:
        raise HttpError(ErrorCode.BAD_JSON.value, f"the body is not valid JSON: {exc}") from None
    except UnicodeDecodeError:
        raise HttpError(ErrorCode.BAD_JSON.value, "the body is not valid JSON: its text is not UTF-8") from None


def rfc3339(at: float | None = None) -> str:
    """A time as Ollama writes `created_at` (UTC, nanoseconds)."""
    ns = time.time_ns() if at is None else int(at * 1e9)
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"
