"""What both HTTP APIs share on the wire: bodies decoded into Structs (a clear 400 when
one is not what the API takes), timestamps, content types."""

import asyncio
import time
from typing import TypeVar

import msgspec
from aiohttp import web

from ctxkeep.daemon.transports.http.errors import HttpError
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.codec import MAX_DEPTH, too_deep

NDJSON = "application/x-ndjson"
T = TypeVar("T")


#: A body larger than this is decoded in a worker thread, not on the event loop.
DECODE_ON_LOOP_BYTES = 256 * 1024


async def read_json(request: web.Request, kind: type[T], most_messages: int = 0) -> T:
    """The request's JSON body as `kind` (decoded off the event loop when it is large), or
    HttpError(400) that says what is wrong with it; with `most_messages`, one that plainly
    carries more messages than that is refused (413) before it is decoded."""
    raw = await request.read()
    roles = raw.count(b'"role"') if most_messages else 0
    if roles > 2 * most_messages:  # plainly too many, seen before decoding it all
        raise HttpError(ErrorCode.INVALID_REQUEST.value, f"about {roles:,} messages in one request: at most "
                        f"{most_messages:,} are taken (http_max_messages)", 413)
    if len(raw) > DECODE_ON_LOOP_BYTES:
        return await asyncio.to_thread(decode_body, raw, kind)
    return decode_body(raw, kind)


def decode_body(raw: bytes, kind: type[T]) -> T:
    """The JSON body as `kind`, or HttpError(400) that says what is wrong with it."""
    if too_deep(raw):
        raise HttpError(ErrorCode.BAD_JSON.value, f"the body nests deeper than {MAX_DEPTH} levels: flatten it")
    try:
        return msgspec.json.decode(raw or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        raise HttpError(ErrorCode.INVALID_REQUEST.value, f"invalid request: {exc}") from None
    except msgspec.DecodeError as exc:
        raise HttpError(ErrorCode.BAD_JSON.value, f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise HttpError(ErrorCode.BAD_JSON.value, "the body nests too deeply: flatten it") from None
    except UnicodeDecodeError:
        raise HttpError(ErrorCode.BAD_JSON.value, "the body is not valid JSON: its text is not UTF-8") from None


def rfc3339(at: float | None = None) -> str:
    """A time as Ollama writes `created_at` (UTC, nanoseconds)."""
    ns = time.time_ns() if at is None else int(at * 1e9)
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


MEMORY_MODES = ("all", "none", "private")


def memory_header(request: web.Request) -> str | None:
    """The X-Ctxkeep-Memory header: memory across sessions for the conversation's session
    ("all", "none" or "private"; absent: as it is), or HttpError(400)."""
    value = request.headers.get("X-Ctxkeep-Memory", "").strip().lower()
    if not value:
        return None
    if value not in MEMORY_MODES:
        raise HttpError(ErrorCode.INVALID_REQUEST.value,
                        f"X-Ctxkeep-Memory takes {', '.join(MEMORY_MODES)}; not {value[:40]!r}")
    return value
