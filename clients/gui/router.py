"""Where the worker's answers go: each part of the window says which replies (by type) and
which failed requests (by the request's type) it takes, and the window hands every one to
the router, which knows no part's insides."""

from collections.abc import Callable
from typing import Any

from ...protocol import requests

#: (the request, its reply): each of the type it was routed by (known only when it runs)
ReplyHandler = Callable[[Any, Any], None]
FailureHandler = Callable[[requests.Request, str], None]


class Router:
    """Replies and failures to the parts that asked to take them."""

    def __init__(self, otherwise: Callable[[str], None]) -> None:
        self._replies: dict[type, ReplyHandler] = {}
        self._failures: dict[type, FailureHandler] = {}
        #: What a failure no part takes comes to (the status bar).
        self.otherwise = otherwise

    def on_reply(self, kind: type, handler: ReplyHandler) -> None:
        self._replies[kind] = handler

    def on_failure(self, kind: type[requests.Request], handler: FailureHandler) -> None:
        self._failures[kind] = handler

    def reply(self, request: requests.Request, reply: object) -> None:
        handler = self._replies.get(type(reply))
        if handler is not None:
            handler(request, reply)

    def failed(self, request: requests.Request, message: str) -> None:
        self._failures.get(type(request), lambda _, text: self.otherwise(text))(request, message)
