"""Images in the log as thumbnails: a message's images drawn small in a row, each one's
bytes asked for once (`image.get`) and kept as a resource of the log's document."""

import base64
from collections.abc import Callable

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QImage, QTextDocument

#: The largest side of a thumbnail, in pixels.
THUMBNAIL = 96
IMAGE = QTextDocument.ResourceType.ImageResource


def thumbnails_html(document: QTextDocument, digests: list[str], asked: set[str],
                    want: Callable[[str], None], dim: str) -> str:
    """The images' row: a thumbnail where the bytes are here, else `[image]` (and `want`
    called for it, once)."""
    shown = []
    for digest in digests:
        if document.resource(IMAGE, QUrl(f"ctximg:{digest}")) is None:
            if digest not in asked:
                asked.add(digest)
                want(digest)
            shown.append(f'<span style="color:{dim};">[image]</span>')
        else:
            shown.append(f'<img src="ctximg:{digest}">')
    return f'<p>{" ".join(shown)}</p>' if shown else ""


def add_thumbnail(document: QTextDocument, digest: str, data: str) -> bool:
    """Keep an image's thumbnail (`data`: its bytes as base64, as `image.get` gives them) in
    the document; False when they are no image Qt reads."""
    image = QImage.fromData(base64.b64decode(data))
    if image.isNull():
        return False
    document.addResource(IMAGE, QUrl(f"ctximg:{digest}"),
                         image.scaled(THUMBNAIL, THUMBNAIL, Qt.AspectRatioMode.KeepAspectRatio))
    return True
