"""What an OpenAI-compatible server's failures mean to the daemon: the `openai` library's
exceptions (and httpx's, which a broken stream raises) as coded errors that say what to
do next, each naming the server as config.toml does."""

import logging
import re
from typing import TYPE_CHECKING

from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.protocol import ErrorCode

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

#: How the servers word a prompt over the window (vLLM and llama-cpp-python: OpenAI's own
#: "maximum context length"; llama.cpp: "exceeds the available context size"; LM Studio:
#: "context length" / "context overflow").
OVERFLOW = re.compile(r"context (length|size|window|overflow)|exceeds? .*context|too long", re.I)


def classify(exc: BaseException, where: str, model: str, read_timeout: float) -> tuple[ModelCallError, bool]:
    """(the error, whether the server answered at all) for a failed call; `where` names the
    server ("llama.cpp 'gpu1' at http://…")."""
    import httpx
    import openai
    if isinstance(exc, ModelCallError):
        return exc, False
    if isinstance(exc, openai.APIConnectionError) and isinstance(exc.__cause__, httpx.HTTPError) \
            and not isinstance(exc.__cause__, httpx.ConnectError):
        exc = exc.__cause__  # what broke: a read timeout, or a stream cut midway
    if isinstance(exc, (openai.APITimeoutError, httpx.ReadTimeout)):
        return ModelCallError(
            ErrorCode.OLLAMA_NOT_ANSWERING,
            f"the model server {where} sent nothing for {read_timeout:g} s (read_timeout): check "
            "that it still runs, then send again"), False
    if isinstance(exc, (openai.APIConnectionError, ConnectionError, httpx.ConnectError)):
        return ModelCallError(
            ErrorCode.OLLAMA_UNREACHABLE,
            f"cannot reach the model server {where}: start it, or fix its url in the "
            "[[backends]] table of config.toml"), False
    if isinstance(exc, openai.APIStatusError):
        return _answered(exc, where, model), True
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return ModelCallError(
            ErrorCode.STREAM_INTERRUPTED,
            f"the connection to the model server {where} broke mid-answer "
            f"({str(exc) or type(exc).__name__}): check that it still runs, then send again"), False
    log.exception("unexpected failure of a model call", exc_info=exc)
    return ModelCallError(ErrorCode.MODEL_SERVER_ERROR, f"model call failed: {exc!r}"), False


def _answered(exc: "openai.APIStatusError", where: str, model: str) -> ModelCallError:
    """The error the server answered with."""
    text = message_of(exc)
    if exc.status_code == 404 or (exc.status_code == 400 and "model" in text.lower() and "not" in text.lower()
                                  and "found" in text.lower()):
        return ModelCallError(
            ErrorCode.MODEL_NOT_FOUND,
            f"model {model!r} is not served by {where} ({text}): pick one it serves "
            "(`ctxkeep models`), or list the model under another backend in config.toml")
    if exc.status_code in (400, 413) and OVERFLOW.search(text):
        return ModelCallError(
            ErrorCode.CONTEXT_OVERFLOW,
            f"{where} refused a prompt larger than its window ({text}): compact the session, "
            "or start the server with a larger context and set context_length to match")
    if exc.status_code in (401, 403):
        return ModelCallError(
            ErrorCode.MODEL_SERVER_ERROR,
            f"{where} refused the key (HTTP {exc.status_code}: {text}): set `key` in its "
            "[[backends]] table of config.toml")
    return ModelCallError(ErrorCode.MODEL_SERVER_ERROR, f"{where} answered HTTP {exc.status_code}: {text}")


def message_of(exc: "openai.APIStatusError") -> str:
    """The server's own words: OpenAI's `error.message`, llama.cpp's, or the body."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return str(inner.get("message") or inner.get("detail") or inner)
        if isinstance(inner, str):
            return inner
        return str(body.get("detail") or body.get("message") or body)
    return str(exc.message or body or "")
