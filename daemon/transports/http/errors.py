"""Errors as each API's clients expect them: the engine's error codes as HTTP statuses,
Ollama's `{"error": "..."}` and OpenAI's error object."""

from aiohttp import web

from ctxkeep.protocol import ErrorCode

#: The HTTP status of each error code (others: 500).
STATUS = {
    ErrorCode.BAD_JSON: 400, ErrorCode.INVALID_REQUEST: 400, ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.CONTEXT_OVERFLOW: 400, ErrorCode.FRAME_TOO_LARGE: 413,
    ErrorCode.UNKNOWN_SESSION: 404, ErrorCode.AMBIGUOUS_SESSION: 400, ErrorCode.MODEL_NOT_FOUND: 404,
    ErrorCode.BUSY: 409, ErrorCode.OLLAMA_UNREACHABLE: 502, ErrorCode.OLLAMA_ERROR: 502, ErrorCode.MODEL_SERVER_ERROR: 502,
    ErrorCode.STREAM_INTERRUPTED: 502, ErrorCode.OLLAMA_NOT_ANSWERING: 504,
    ErrorCode.SHUTTING_DOWN: 503, ErrorCode.STORAGE_ERROR: 507, ErrorCode.CANCELLED: 499,
}
#: OpenAI's error `type` for a status.
OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                409: "conflict_error", 413: "invalid_request_error"}


class HttpError(Exception):
    """A request the front door answers with an error: what went wrong and its status."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or STATUS.get(ErrorCode(code) if code in ErrorCode._value2member_map_
                                           else ErrorCode.INTERNAL, 500)


def ollama_error(error: HttpError) -> web.Response:
    return web.json_response({"error": error.message}, status=error.status)


def openai_error(error: HttpError) -> web.Response:
    kind = OPENAI_TYPES.get(error.status, "server_error" if error.status >= 500 else "invalid_request_error")
    return web.json_response({"error": {"message": error.message, "type": kind, "param": None,
                                        "code": error.code}}, status=error.status)
