"""The daemon's coded error: an error code and a message that says what to do next.

Raised anywhere a request or a job cannot go on; the control loop answers it
as an `error` reply, a job as its terminal event. The store's own errors
(store/errors.py) carry their code too.
"""

from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.errors import CodedError


class RequestError(CodedError):
    """A failure with the protocol's error code and a message for the user."""

    code: ErrorCode

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(code, message)
