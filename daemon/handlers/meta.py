"""hello, ping, status."""

import asyncio
import os
import time

from ctxkeep.daemon.handlers.registry import handles
from ctxkeep.daemon.services import Services
from ctxkeep.protocol import DAEMON_VERSION, PROTOCOL_VERSION, requests, subjects
from ctxkeep.protocol.replies import HelloReply, Pong, StatusReply

#: The longest `status` waits for a down server to say it is back.
RECHECK_S = 1.5
SUBJECTS = sorted(v for k, v in vars(subjects).items() if k.isupper() and isinstance(v, str))


@handles(requests.Hello)
async def hello(services: Services, req: requests.Hello) -> HelloReply:
    return HelloReply(id=req.id, daemon=DAEMON_VERSION, protocol=PROTOCOL_VERSION,
                      pid=os.getpid(), subjects=SUBJECTS)


@handles(requests.Ping)
async def ping(services: Services, req: requests.Ping) -> Pong:
    return Pong(id=req.id, time=time.time())


@handles(requests.Status)
async def status(services: Services, req: requests.Status) -> StatusReply:
    """The daemon's status; a model server that was down is asked again first (briefly),
    so a server that came back is not reported down until its next scheduled check."""
    if any(not h.reachable for h in services.backend.hosts()):
        try:
            async with asyncio.timeout(RECHECK_S):
                await services.backend.check(down_too=True)
        except TimeoutError:
            pass  # it says what it knew
    return StatusReply(id=req.id, status=services.status())
