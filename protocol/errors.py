"""Error codes of `error` replies and `generation.error` events."""

from enum import Enum


class ErrorCode(str, Enum):
    """Why a request failed. The `message` beside it says what to do next."""

    # The frame itself
    BAD_FRAME = "bad_frame"  # empty, or the wrong number of frames
    FRAME_TOO_LARGE = "frame_too_large"
    BAD_JSON = "bad_json"  # not JSON, not UTF-8, or not a JSON object
    UNKNOWN_TYPE = "unknown_type"
    INVALID_REQUEST = "invalid_request"  # a field is missing or of the wrong type
    UNSUPPORTED_VERSION = "unsupported_version"
    # The request's subject
    UNKNOWN_SESSION = "unknown_session"
    AMBIGUOUS_SESSION = "ambiguous_session"
    INVALID_ARGUMENT = "invalid_argument"
    BUSY = "busy"
    # The model server
    OLLAMA_UNREACHABLE = "ollama_unreachable"
    MODEL_NOT_FOUND = "model_not_found"
    OLLAMA_ERROR = "ollama_error"
    MODEL_SERVER_ERROR = "model_server_error"  # an OpenAI-compatible server answered with an error
    STREAM_INTERRUPTED = "stream_interrupted"
    OLLAMA_NOT_ANSWERING = "ollama_not_answering"  # took the request, sent nothing back
    CONTEXT_OVERFLOW = "context_overflow"
    CANCELLED = "cancelled"
    # The daemon
    STORAGE_ERROR = "storage_error"
    SHUTTING_DOWN = "shutting_down"
    DAEMON_RESTARTED = "daemon_restarted"  # an answer cut short when ctxkeepd stopped
    INTERNAL = "internal"


class CodedError(Exception):
    """A failure with its error code and a message that says what to do next: the one
    error type of the protocol, raised by the daemon (RequestError) and by the clients
    (CtxkeepError) alike."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message
