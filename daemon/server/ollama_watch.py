"""The model servers watched while the daemon runs: whether they answer, their versions,
their models."""

import asyncio
import logging
from collections.abc import Callable

from ctxkeep.daemon.backends.protocol import ModelBackend, ModelCallError

log = logging.getLogger(__name__)
#: Seconds between checks of Ollama while it answers, and while it does not.
OLLAMA_CHECK_S = 60.0
OLLAMA_RETRY_S = 2.0


async def watch_ollama(backend: ModelBackend, server_changed: Callable[[], None],
                       status_changed: Callable[[], None]) -> None:
    """Check Ollama at start, every minute (every 2 s while it is unreachable), and at
    once when a model call finds it otherwise than the last check said; say clearly when
    it is unreachable; a server that is down among several is asked again when its wait
    (`retry_in`) is over. `server_changed` is called when it may have other models now (woken
    or changed), `status_changed` when it became reachable or not, or another version."""
    known: tuple[bool, str] | None = None
    while True:
        woken = backend.changed.is_set()  # by a model call, or a model pulled
        backend.changed.clear()
        status = await backend.check()
        if woken or (status.reachable, status.version) != known:
            server_changed()  # e.g. recall's embedder: it may have the embedding model now
        if status.reachable:  # and which models it has (is the default one of them?)
            try:
                await backend.installed(details=False)
            except ModelCallError:
                pass
        if (status.reachable, status.version) != known:
            if status.reachable:
                log.info("Ollama %s reachable at %s", status.version, status.host)
            else:
                log.warning("Ollama is not reachable at %s: %s", status.host, status.error)
            known = (status.reachable, status.version)
            status_changed()
        interval = OLLAMA_CHECK_S if status.reachable else OLLAMA_RETRY_S
        waits = [max(h.retry_in, 0.05) for h in backend.hosts() if h.checked and not h.reachable]
        interval = min([interval, *waits])
        try:  # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel that
            # comes just as the event is set (the watch then held the daemon's stop a minute)
            async with asyncio.timeout(interval):
                await backend.changed.wait()
        except TimeoutError:
            pass
