"""A request to its reply, whichever transport it came by: the handler's reply, or the
error that names what went wrong. Never raises: nothing a request does stops a transport."""

import logging

from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.handlers.registry import HANDLERS, LOCAL, Caller
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.errors import StoreError
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.replies import Error, Reply
from ctxkeep.protocol.requests import Request

log = logging.getLogger(__name__)


async def dispatch(services: Services, request: Request, caller: Caller = LOCAL) -> Reply:
    """The reply to `request` from `caller`."""
    try:
        return await HANDLERS[type(request)](services, request, caller)
    except RequestError as exc:
        return Error(id=request.id, code=exc.code.value, message=exc.message)
    except StoreError as exc:
        if exc.code is not ErrorCode.STORAGE_ERROR:  # about the request, not the disk
            return Error(id=request.id, code=exc.code.value, message=str(exc))
        log.error("storage failure: %s", exc)
        return Error(id=request.id, code=exc.code.value,
                     message=f"{exc}; nothing was changed: free disk space, then retry")
    except Exception as exc:  # the transport must keep serving
        log.exception("handler for %s failed", type(request).__name__)
        return Error(id=request.id, code=ErrorCode.INTERNAL.value,
                     message=f"internal error ({exc!r}): see the daemon's log")
