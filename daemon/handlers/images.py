"""image.get: an image's bytes, by the hash a message's `images` item gives."""

import base64

from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.images import media_type
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import ImageReply


@handles(requests.ImageGet)
async def image_get(services: Services, req: requests.ImageGet) -> ImageReply:
    data = services.store.images.get(req.hash)
    if data is None:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, f"no image {req.hash[:12]}… is stored: take the hash "
                                                "from a message's `images` (history)")
    return ImageReply(id=req.id, hash=req.hash, media_type=media_type(data),
                      data=base64.b64encode(data).decode())
