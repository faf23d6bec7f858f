"""What Ollama's answers and failures mean to the daemon: the official client's chunks as
`ChatChunk`s, its exceptions as coded errors that say what to do next."""

import logging
from typing import Any

from ctxkeep.daemon.backends.protocol import ChatChunk, ModelCallError
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.tools import FunctionCall, ToolCall

log = logging.getLogger(__name__)


def chunk_of(response: Any, host: str, cached: int | None = None) -> ChatChunk:
    """An `ollama.ChatResponse` (a streamed chunk, or a whole answer) as a ChatChunk (with
    `cached`, the prompt tokens Ollama's cache served, as its bytes said)."""
    message = response.message
    calls = tuple(ToolCall(function=FunctionCall(name=c.function.name, arguments=dict(c.function.arguments or {})))
                  for c in (message.tool_calls or ()))
    if not response.done:
        return ChatChunk(content=message.content or "", thinking=message.thinking or "", tool_calls=calls)
    return ChatChunk(
        content=message.content or "", thinking=message.thinking or "", tool_calls=calls, done=True,
        done_reason=str(response.done_reason or ""), prompt_eval_count=response.prompt_eval_count,
        prompt_eval_cached_count=cached,
        eval_count=int(response.eval_count or 0), total_duration=int(response.total_duration or 0),
        load_duration=int(response.load_duration or 0),
        prompt_eval_duration=int(response.prompt_eval_duration or 0),
        eval_duration=int(response.eval_duration or 0), host=host)


def classify(exc: BaseException, host: str, model: str, read_timeout: float) -> tuple[ModelCallError, bool]:
    """(the error, whether Ollama answered at all) for a failed call to Ollama at `host`."""
    import httpx
    from ollama import ResponseError
    if isinstance(exc, ModelCallError):
        return exc, False
    if isinstance(exc, (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout)):
        return ModelCallError(
            ErrorCode.OLLAMA_UNREACHABLE,
            f"cannot reach Ollama at {host}: start it (`ollama serve` or "
            "`systemctl start ollama`), or point ctxkeepd at it with OLLAMA_HOST "
            "or `ollama_host` in config.toml"), False
    if isinstance(exc, ResponseError):
        return _answered(exc, host, model), True
    if isinstance(exc, httpx.ReadTimeout):
        return ModelCallError(
            ErrorCode.OLLAMA_NOT_ANSWERING,
            f"Ollama at {host} sent nothing for {read_timeout:g} s (read_timeout): "
            "check that it still runs (`ollama ps`, or restart it), then send again"), False
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return ModelCallError(
            ErrorCode.STREAM_INTERRUPTED,
            f"the connection to Ollama broke mid-answer ({str(exc) or type(exc).__name__}): "
            "check that Ollama is still running, then send again"), False
    log.exception("unexpected failure of a model call", exc_info=exc)
    return ModelCallError(ErrorCode.OLLAMA_ERROR, f"model call failed: {exc!r}"), False


def _answered(exc: Any, host: str, model: str) -> ModelCallError:
    """The error Ollama answered with (`ollama.ResponseError`)."""
    error = str(exc.error)
    if exc.status_code == 404 or "not found" in error:
        return ModelCallError(
            ErrorCode.MODEL_NOT_FOUND,
            f"model {model!r} is not available in Ollama at {host}: "
            f"run `ollama pull {model}`, or pick an installed model "
            "(`ctxkeep set SESSION --model NAME`)")
    if "context length" in error or "exceeds" in error:
        return ModelCallError(
            ErrorCode.CONTEXT_OVERFLOW,
            f"Ollama refused a prompt larger than the window ({error}): compact the "
            "session or raise num_ctx")
    status = f"HTTP {exc.status_code}" if exc.status_code > 0 else "an error"
    return ModelCallError(ErrorCode.OLLAMA_ERROR, f"Ollama answered {status}: {error}")
