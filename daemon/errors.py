"""The daemon's one coded error: an error code and a message that says what to do next.

Raised anywhere a request or a job cannot go on; the control loop answers it
as an `error` reply, a job as its terminal event.
"""

from ctxkeep.protocol import ErrorCode


class RequestError(Exception):
    """A failure with the protocol's error code and a message for the user."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
