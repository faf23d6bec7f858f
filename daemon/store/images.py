"""Image bytes, stored once per content hash, outside the messages that refer to them."""

import base64
import binascii
import hashlib

from ctxkeep.daemon.store.environment import Environment
from ctxkeep.daemon.store.txn import Txn
from ctxkeep.protocol.images import ImageInput, ImageRef

#: Media types by the bytes an image file starts with (the formats vision models read).
SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
              (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


class ImageRejected(ValueError):
    """An image that cannot be stored: why, in the user's words."""


def media_type(data: bytes) -> str:
    """The image's media type from its first bytes ("" if it is none the models read)."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for head, kind in SIGNATURES if data.startswith(head)), "")


def decoded(image: ImageInput, index: int, max_bytes: int) -> tuple[bytes, str]:
    """An image's bytes and media type, or ImageRejected naming it and what to do."""
    what = f"images[{index}]" + (f" ({image.name})" if image.name else "")
    try:
        data = base64.b64decode(image.data, validate=True)
    except (binascii.Error, ValueError):
        raise ImageRejected(f"{what} is not base64: send the image's bytes base64-encoded") from None
    if len(data) > max_bytes:
        raise ImageRejected(f"{what} is {len(data):,} bytes, over the limit of {max_bytes:,} "
                            "(max_image_bytes in config.toml): send a smaller image")
    kind = media_type(data)
    if not kind:
        raise ImageRejected(f"{what} is not a PNG, JPEG, GIF or WebP image")
    return data, kind


class Images:
    """The `images` database: sha256 (hex) -> the image's bytes."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.db = env.dbs["images"]

    def put(self, data: bytes, kind: str, name: str = "") -> ImageRef:
        """Store an image (once: the same bytes again are not stored twice); its reference."""
        digest = hashlib.sha256(data).hexdigest()
        self.env.write(lambda txn: txn.put(digest.encode(), data, db=self.db, overwrite=False))
        return ImageRef(hash=digest, media_type=kind, size=len(data), name=name)

    def get(self, digest: str) -> bytes | None:
        return self.env.read(lambda txn: txn.get(digest.encode(), db=self.db))

    def encoded(self, digests: list[str]) -> dict[str, str]:
        """Images' bytes as base64 (as the chat API takes them), by hash; a missing one left out."""
        def read(txn: Txn) -> dict[str, str]:
            found = {d: txn.get(d.encode(), db=self.db) for d in set(digests)}
            return {d: base64.b64encode(raw).decode() for d, raw in found.items() if raw is not None}
        return self.env.read(read)
