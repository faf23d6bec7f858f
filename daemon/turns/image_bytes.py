"""A prompt's images as the chat API takes them: the stored bytes, base64, in place of the
hashes `prompt.wire` leaves (read off the event loop, once per turn)."""

import asyncio
from typing import Any

from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import ErrorCode


async def images_in(store: Store, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with each message's image hashes replaced by the images' bytes."""
    wanted = [h for m in messages for h in m.get("images", ())]
    if not wanted:
        return messages
    found = await asyncio.to_thread(store.images.encoded, wanted)
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise RequestError(ErrorCode.STORAGE_ERROR, f"the image {missing[0][:12]}… is missing from the "
                                                    "store: check it with `ctxkeepd check STORE_FOLDER`, or restore a backup")
    return [{**m, "images": [found[h] for h in m["images"]]} if m.get("images") else m for m in messages]
