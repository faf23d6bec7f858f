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


def subscription_not_taken(pid: int, waited: float) -> CtxkeepError:
    """The error for a subscription the daemon did not greet while it answers requests."""
    return CtxkeepError("subscription_refused", f"ctxkeepd (pid {pid}) answers requests but did not take "
                        f"this client's event subscription in {waited:g} s: it holds as many as "
                        "max_subscriptions and max_subscriptions_per_client allow (its log names the "
                        "limit and the connection), or it is very busy: retry, or raise those limits "
                        "in config.toml")


def daemon_restarted(pid: int) -> CtxkeepError:
    """What a client waiting on a daemon says when another daemon answers instead."""
    return CtxkeepError("daemon_restarted",
                        f"ctxkeepd restarted (now pid {pid}) while this waited: what it was doing was "
                        "interrupted; its question is kept in history, marked interrupted. Send it again.")

