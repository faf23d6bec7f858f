"""Write transactions off the event loop, committed in groups.

A synced LMDB commit waits for the disk (fdatasync: milliseconds on a slow disk);
py-lmdb releases the GIL meanwhile, so a commit in a thread leaves the event loop
free. One writer thread runs them: what is submitted while a commit is in flight
waits for it and then goes together in the next transaction — one sync for all of
them (group commit). Each write of a group runs in a nested transaction of its own,
so one that fails is undone alone and fails alone; a write alone in its commit runs in
the commit's transaction (fewer LMDB calls, each of which lets the GIL go).
"""

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import lmdb

from ctxkeep.daemon.store.txn import Txn

log = logging.getLogger(__name__)
T = TypeVar("T")
Write = Callable[[Txn], Any]


class GroupWriter:
    """Runs write functions in one thread, grouping those that wait into one commit."""

    def __init__(self, env: lmdb.Environment, write: Callable[[Write], Any]) -> None:
        self._env = env
        #: The environment's own write (grows the map, maps LMDB errors to StoreError).
        self._write = write
        self._pending: list[tuple[Write, asyncio.Future, asyncio.AbstractEventLoop]] = []
        self._lock = threading.Lock()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="ctxkeep-store-writer")
        #: Commits made, and writes they carried (to count syncs per turn).
        self.commits = 0
        self.writes = 0

    def submit(self, fn: Callable[[Txn], T]) -> "asyncio.Future[T]":
        """Queue `fn` for the next grouped commit now (the writer thread is woken before
        this returns); the future settles once its commit is synced. Call from the loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        with self._lock:
            self._pending.append((fn, future, loop))
            first = len(self._pending) == 1
        if first:  # else a commit is already scheduled and will take it
            self._thread.submit(self._commit)
        return future

    async def call(self, fn: Callable[[], T]) -> T:
        """Run `fn`, a store method that commits on its own, in the writer thread (in turn
        with the grouped commits), so that its sync does not hold up the event loop."""
        return await asyncio.wrap_future(self._thread.submit(fn))

    def _commit(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return

        def apply(txn: Txn) -> list[tuple[bool, Any]]:
            if len(batch) == 1:  # alone, its failure fails the commit: no nested transaction
                return [(True, batch[0][0](txn))]
            outcomes: list[tuple[bool, Any]] = []
            for fn, _, _ in batch:
                try:
                    with self._env.begin(write=True, parent=txn) as child:
                        outcomes.append((True, fn(child)))
                except lmdb.MapFullError:
                    raise  # the environment grows the map and runs the whole group again
                except Exception as exc:  # this write alone fails
                    outcomes.append((False, exc))
            return outcomes
        try:
            results = self._write(apply)
            self.commits += 1
            self.writes += len(batch)
        except Exception as exc:  # the commit failed: every write in it did
            results = [(False, exc)] * len(batch)
        for (_, future, loop), (ok, value) in zip(batch, results):
            loop.call_soon_threadsafe(_settle, future, ok, value)

    def close(self) -> None:
        """Finish what was submitted, then stop the thread."""
        self._thread.shutdown(wait=True)


async def landed(write: Awaitable[T]) -> tuple[T, bool]:
    """Wait for a commit in flight even when cancelled meanwhile: it lands regardless, and
    what follows must know it did. Returns its result, and whether a cancel came."""
    future = asyncio.ensure_future(write)
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait([future])
        except asyncio.CancelledError:
            cancelled = True
    return future.result(), cancelled


def _settle(future: asyncio.Future, ok: bool, value: Any) -> None:
    if future.cancelled():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
