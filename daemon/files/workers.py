"""Reading @file references off the event loop, and large ones out of the process.

Outlining a file (Python's AST, tree-sitter) and scanning its text hold the GIL: in a
thread of the daemon, a message with ten 1-MiB files kept other clients' requests
waiting for seconds on a busy 2-core machine. References to files that are small in all
are read in a thread (quick, no process hop); once they pass `PROCESS_BYTES`, the whole
expansion runs in a worker process of a pool started on first use ("forkserver": the
workers never share the daemon's open store or sockets), so the daemon's own thread only
receives the result.
"""

import asyncio
import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ctxkeep.daemon.files.expand import FileSettings, expand, working_dir
from ctxkeep.daemon.files.refs import find_refs
from ctxkeep.daemon.files.safe_read import Refused, resolve
from ctxkeep.daemon.store.records import Attachment
from ctxkeep.daemon.tokens import TokenCount

log = logging.getLogger(__name__)

#: References to more bytes than this (in all) are read in a worker process.
PROCESS_BYTES = 256 << 10


def referenced_bytes(text: str, cwd: str, settings: FileSettings) -> int:
    """The sizes of the files `text` references, as far as a stat tells (no file is read)."""
    where = working_dir(cwd, settings)
    total = 0
    for ref in find_refs(text)[:settings.max_refs]:
        try:
            path, _ = resolve(ref.path, where, settings.roots)
            total += os.stat(path).st_size if ref.mode != "listing" else 0
        except (Refused, OSError):
            continue
    return total


class FileReader:
    """Expands a message's @file references without holding up the event loop."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["ctxkeep.daemon.files.expand"])
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context)
        return self._pool

    async def expand(self, text: str, cwd: str, settings: FileSettings,
                     weights: list[float]) -> list[Attachment]:
        """The message's attachments (expand.expand), read where they cost the loop least."""
        count = TokenCount(weights)
        heavy = await asyncio.to_thread(referenced_bytes, text, cwd, settings) > PROCESS_BYTES
        if not heavy:
            return await asyncio.to_thread(expand, text, cwd, settings, count)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor(), expand, text, cwd, settings, count)
        except BrokenProcessPool:  # a worker died (killed, out of memory): start afresh
            log.warning("a file worker died; starting a new one")
            self.close()
            return await loop.run_in_executor(self._executor(), expand, text, cwd, settings, count)

    def close(self) -> None:
        """Stop the workers, and the fork server they came from (at shutdown: a worker or a
        server left behind would outlive the daemon)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            stop_fork_server()


def stop_fork_server() -> None:
    """Stop this process's multiprocessing fork server, where it started one (it would
    otherwise wait for the whole process to exit, and outlive it when the process is killed)."""
    from multiprocessing import forkserver
    try:
        forkserver._forkserver._stop()  # type: ignore[attr-defined]  # private: the standard library's own way to stop it
    except (OSError, AttributeError) as exc:
        log.debug("the fork server did not stop: %r", exc)
