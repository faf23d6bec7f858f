"""Images in messages: what a client sends (Ollama's base64 `images`, with a name), and the
reference a stored message keeps (the bytes are stored once per content hash, outside the
message, and fetched with `image.get`)."""

from typing import Annotated

import msgspec
from msgspec import Meta

#: A sha256 of an image's bytes, as lowercase hex.
ImageHash = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]


class ImageInput(msgspec.Struct, kw_only=True):
    """An image sent with a message: its bytes as base64 (as Ollama's `images` items), and
    a name shown in its place where the model does not see it (a file name, a caption)."""

    data: str
    name: Annotated[str, Meta(max_length=200)] = ""


class ImageRef(msgspec.Struct, kw_only=True, frozen=True):
    """An image a message holds: its bytes' sha256 (fetch them with `image.get`), media type,
    size, and name."""

    hash: ImageHash
    media_type: str
    size: int
    name: str = ""

    def note(self) -> str:
        """What the model reads in the image's place when it does not see it (a model without
        vision, or an old image level 1 set aside)."""
        return f"[image: {self.name}]" if self.name else "[image]"
