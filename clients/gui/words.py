"""The window's words for the protocol's codes: what happened and what to do, never the
code itself."""

import time

#: Why an answer stopped, by error code.
STOPPED = {
    "ollama_unreachable": "Ollama is not running — start it (`ollama serve`), then send again",
    "model_not_found": "this model is not installed — pick another in the model menu, or pull it",
    "ollama_error": "Ollama reported an error",
    "stream_interrupted": "the connection to Ollama broke while the answer was written",
    "context_overflow": "the conversation no longer fits the model's window — compact it "
                        "(Ctrl+Shift+C)",
    "cancelled": "stopped",
    "storage_error": "the answer could not be saved (is the disk full?)",
    "daemon_restarted": "cut short when ctxkeepd stopped",
    "shutting_down": "ctxkeepd is stopping",
    "internal": "ctxkeepd hit a bug (its log has the details)",
}

#: Why a compaction did not run or failed, in the window's words.
COMPACTION = {"skipped": "Nothing to compact yet", "failed": "Compaction failed"}


def compaction_outcome(status: str, reason: str) -> str:
    """The status line for a compaction that changed nothing; one stopped on purpose (Esc,
    Stop, another client's cancel) is not a failure."""
    if status == "failed" and reason.startswith("cancelled"):
        return "Compaction stopped — the context is as it was"
    return f"{COMPACTION.get(status, status)}: {reason}"


def stopped(code: str, message: str = "") -> str:
    """A short note for an answer that did not complete."""
    words = STOPPED.get(code)
    if words is None:
        return message or "stopped"
    if code in ("ollama_error", "internal") and message:
        return f"{words}: {message}"
    return words


def when(created: float) -> str:
    """A message's time as the window shows it on hover."""
    return time.strftime("%a %d %b %Y, %H:%M", time.localtime(created))
