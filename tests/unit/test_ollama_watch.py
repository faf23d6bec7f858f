"""The daemon's watch of its model servers stops when it is cancelled, whatever else
happens in the same moment (daemon/server/ollama_watch.py)."""

import asyncio
from dataclasses import dataclass, field

from ctxkeep.daemon.server.ollama_watch import watch_ollama
from ctxkeep.protocol.structs import OllamaStatus


@dataclass
class Answering:
    """A model server that answers every check at once."""

    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def check(self) -> OllamaStatus:
        return OllamaStatus(host="http://x", reachable=True, version="0.12.0")

    async def installed(self, details: bool = True) -> list:
        return []

    def hosts(self) -> list:
        return []


def test_a_cancel_that_comes_as_the_servers_change_is_woken_still_stops_the_watch():
    """Python 3.11's `asyncio.wait_for` returned normally when the cancel came in the same
    loop iteration as the event it waited on: the watch went on to wait a minute more, and
    the daemon's stop (which waits for it) hung (seen as a 30 s teardown in the suite)."""
    async def go() -> bool:
        backend = Answering()
        watch = asyncio.create_task(watch_ollama(backend, lambda: None, lambda: None))
        await asyncio.sleep(0.05)  # in its minute-long wait
        backend.changed.set()  # a model call says the server changed ...
        watch.cancel()  # ... as the daemon stops
        done, _ = await asyncio.wait({watch}, timeout=2)
        return watch in done
    assert asyncio.run(go())
