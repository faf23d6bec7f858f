"""Which of several model servers takes a call, and which are up.

A call for a model goes to the first server that serves it and is not answering another
call (config order; a side request such as an embedding does not count, so the model's
prompt cache stays where it is). A server that cannot be reached, or whose answer broke
before its first token, is marked down and the call goes on to the next one. A down
server is asked again after a wait that doubles (1 s up to half a minute; the daemon's
watch asks it, and it is still tried when no other server is left).
"""

import asyncio
import logging
import time

from ctxkeep.daemon.backends.host import Host
from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.structs import BackendStatus, OllamaStatus

log = logging.getLogger(__name__)
#: The longest wait before a down server is asked again, in seconds.
MAX_RETRY_S = 30.0
#: Failures that mean "this server, not the request": the next server is tried.
SERVER_FAILURES = frozenset({ErrorCode.OLLAMA_UNREACHABLE, ErrorCode.STREAM_INTERRUPTED})
#: Failures after which another server may still do: it is tried, this one stays up.
TRY_ANOTHER = frozenset({ErrorCode.MODEL_NOT_FOUND, ErrorCode.OLLAMA_ERROR, ErrorCode.MODEL_SERVER_ERROR})


class Routing:
    """The servers' order for a model, and their up and down states."""

    def __init__(self, members: list[Host]) -> None:
        assert members, "at least one model server"
        self.members = members
        self.changed = members[0].backend.changed  # shared by every member

    @property
    def status(self) -> OllamaStatus:
        """Reachable while any server is: the first reachable one's status, else every error."""
        states = [h.status() for h in self.members]
        up = next((s for s in states if s.reachable), None)
        if up is not None:
            return OllamaStatus(host=up.host, reachable=True, version=up.version)
        return OllamaStatus(host=states[0].host if len(states) == 1 else ", ".join(s.host for s in states),
                            reachable=False, checked=all(s.checked for s in states),
                            error="; ".join(s.error for s in states if s.error))

    def hosts(self) -> list[BackendStatus]:
        return [h.status() for h in self.members]

    def ranked(self, model: str) -> list[Host]:
        """The servers to try for `model`, in order: those that serve it and are up, those
        not answering first, in config order (a side request such as an embedding does not
        send a chat elsewhere: the model's prompt cache is where it was); then the down
        ones, soonest due first."""
        now = time.monotonic()
        serving = [h for h in self.members if h.serves(model) is not False] or list(self.members)
        up = sorted((h for h in serving if h.due(now)), key=lambda h: (h.failures > 0, h.answering))
        return up + sorted((h for h in serving if not h.due(now)), key=lambda h: h.retry_at)

    async def check(self, down_too: bool = False) -> OllamaStatus:
        """Ask each server that is up, or due to be asked again (`down_too`: every down one,
        its wait or not), whether it answers; not one that is answering a call now (it
        evidently answers, and a request beside a stream cuts the stream short on
        llama-cpp-python's server)."""
        now = time.monotonic()
        due = [h for h in self.members if (h.due(now) or down_too) and not h.busy]
        for host, state in zip(due, await asyncio.gather(*(h.backend.check() for h in due))):
            if state.reachable:
                self.up(host)
            elif not host.failures or host.retry_at <= time.monotonic():
                self.down(host)
        return self.status

    def down(self, host: Host) -> None:
        """`host` failed: asked again after a wait that doubles with each failure."""
        host.failures += 1
        host.retry_at = time.monotonic() + min(MAX_RETRY_S, 2.0 ** (host.failures - 1))
        log.warning("model server %s is down; asked again in %.0f s", host.backend.name,
                    host.retry_at - time.monotonic())

    def up(self, host: Host) -> None:
        """`host` answered: up again if it was down."""
        if host.failures:
            log.info("model server %s answers again", host.backend.name)
            host.failures, host.retry_at = 0, 0.0
            self.changed.set()

    def goes_on(self, host: Host, exc: ModelCallError, marks_down: bool = True) -> bool:
        """Whether a call may go on to the next server after `exc` (before any answer);
        a failure of the server itself marks it down (where the call `marks_down`)."""
        if exc.code in SERVER_FAILURES:
            if marks_down:
                self.down(host)
            return True
        return exc.code in TRY_ANOTHER

    @staticmethod
    def all_failed(model: str, tried: list[tuple[Host, ModelCallError]]) -> ModelCallError:
        """The error for a call no server could answer."""
        if len(tried) == 1:
            return tried[0][1]
        return ModelCallError(tried[-1][1].code, f"no model server could answer for {model!r}: " + "; ".join(
            f"{h.backend.name}: {e.message}" for h, e in tried))
