"""An @file reference of a user message, expanded: what the prompt carries for it."""

import msgspec

from ctxkeep.protocol.structs import AttachedFile


class Attachment(msgspec.Struct, kw_only=True):
    """An @file reference of a user message, expanded: what the prompt carries for it."""

    path: str
    mode: str
    #: The block put in the prompt after the message's text.
    block: str
    tokens: int = 0
    #: The same file as a summary block, kept for full expansions so a later
    #: compaction can swap it in ("" when `block` is already a summary or a note).
    summary: str = ""
    summary_tokens: int = 0
    real_path: str = ""
    error: str = ""
    sha256: str = ""
    size: int = 0
    mtime: float = 0.0
    #: The text features of `block` and of `summary` (context/features.py), computed where
    #: the file was read, so that a large file's text is not scanned again.
    features: list[float] = []
    summary_features: list[float] = []

    def info(self) -> AttachedFile:
        return AttachedFile(path=self.path, mode=self.mode, tokens=self.tokens, error=self.error,
                            sha256=self.sha256, size=self.size, mtime=self.mtime)
