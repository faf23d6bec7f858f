"""models.pull: Ollama downloads a model; progress and one result go out as events."""

import asyncio
import logging
import secrets
import time

from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.events import ModelPullProgress, ModelPullResult
from ctxkeep.protocol.replies import PullAccepted

log = logging.getLogger(__name__)
#: Progress events at most this often (Ollama reports every few kilobytes).
EVERY_S = 0.25
#: The pulls running, so that none is collected before it ends.
RUNNING: set[asyncio.Task[None]] = set()


@handles(requests.ModelsPull)
async def pull(services: Services, req: requests.ModelsPull) -> PullAccepted:
    if services.stopping():
        raise RequestError(ErrorCode.SHUTTING_DOWN, "ctxkeepd is shutting down: pull once it is back")
    pull_id = secrets.token_hex(6)
    ended: list[ModelPullResult] = []
    task = asyncio.create_task(_run(services, pull_id, req.model, ended), name=f"pull-{pull_id}")
    RUNNING.add(task)

    def done(t: asyncio.Task[None]) -> None:
        RUNNING.discard(t)
        if not ended:  # cancelled before it began: its result is still owed
            services.bus.publish(_stopped(pull_id, req.model))
    task.add_done_callback(done)
    return PullAccepted(id=req.id, pull_id=pull_id, model=req.model)


def _stopped(pull_id: str, model: str) -> ModelPullResult:
    return ModelPullResult(pull_id=pull_id, model=model, status="failed",
                           code=ErrorCode.SHUTTING_DOWN.value,
                           message="ctxkeepd stopped before the pull ended: pull again")


async def _run(services: Services, pull_id: str, model: str, ended: list[ModelPullResult]) -> None:
    """The pull, ending with exactly one model.pull.result whatever happens (noted in
    `ended`; a pull cancelled before it began gets its result from the task's callback)."""
    publish = services.bus.publish
    result = ModelPullResult(pull_id=pull_id, model=model, status="failed",
                             code=ErrorCode.INTERNAL.value, message="the pull ended without a word")
    try:
        last, shown = float("-inf"), ""
        async for status, completed, total in services.backend.pull(model):
            now = time.monotonic()
            if status != shown or now - last >= EVERY_S or (total and completed == total):
                publish(ModelPullProgress(pull_id=pull_id, model=model, status=status,
                                          completed=completed, total=total))
                last, shown = now, status
        result = ModelPullResult(pull_id=pull_id, model=model, status="ok")
        services.backend.changed.set()  # the daemon's watch lists the models again
    except ModelCallError as exc:
        result = ModelPullResult(pull_id=pull_id, model=model, status="failed",
                                 code=exc.code.value, message=exc.message)
    except asyncio.CancelledError:
        result = _stopped(pull_id, model)
        raise
    except Exception as exc:  # a bug still ends the pull with its result
        log.exception("pull of %s failed", model)
        result = ModelPullResult(pull_id=pull_id, model=model, status="failed",
                                 code=ErrorCode.INTERNAL.value,
                                 message=f"internal error ({exc!r}): see the daemon's log")
    finally:
        ended.append(result)
        publish(result)
