"""What a client raises: the daemon's error answers, and no daemon to answer."""

from ..protocol.errors import CodedError

__all__ = ["CtxkeepError", "DaemonNotAnswering", "DaemonUnavailable"]


class CtxkeepError(CodedError):
    """The daemon answered with an error (or could not be reached)."""


class DaemonUnavailable(CtxkeepError):
    """No daemon answers on the control endpoint."""

    def __init__(self, endpoint: str, why: str) -> None:
        super().__init__("daemon_unavailable",
                         f"ctxkeepd is not running ({why} at {endpoint}): start it with "
                         "`ctxkeep daemon run` (or `ctxkeepd &`)")


class DaemonNotAnswering(DaemonUnavailable):
    """A daemon is running (it holds its lock) but did not answer in time: busy, not dead."""

    def __init__(self, endpoint: str, pid: int, waited: float, what: str = "") -> None:
        CtxkeepError.__init__(
            self, "daemon_not_answering",
            f"ctxkeepd (pid {pid}) is running but did not answer in {waited:g} s at {endpoint} "
            f"(a busy machine?){what}: try again, or look at its log "
            "(`journalctl --user -u ctxkeep`)")
        self.pid = pid
