"""Finding `@path` references in a user's text.

Forms: `@path` (auto: full text when small, else a summary), `@path:full`,
`@path:summary`, `@path:NAME` (a function, class or Class.method),
`@path:lines:A-B` (1-based, inclusive), `@dir/` (a listing), and
`@"path with spaces":mode` for paths with spaces. Text that only looks like a
reference is left alone: e-mail addresses, `@name` without a `/` or `.`
(a decorator or a handle), an `@` right after a quote (a scoped package in pasted code:
`from '@react-navigation/native'`, `"@types/node": "^20"`), and anything inside code
blocks or `code spans`.
"""

import re
from dataclasses import dataclass

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_REF = re.compile(
    r"""(?<![\w@.\\/'"])@(?:"(?P<quoted>[^"\n]+)"|(?P<bare>[^\s"'`:@,;()<>\[\]{}]+))"""
    r"""(?::(?P<mode>full|summary|lines:\d+-\d+|[A-Za-z_][\w.]*))?""")
_TRAILING = ".,;:!?"


@dataclass(frozen=True)
class FileRef:
    """One reference as written: where it is in the text, the path, the mode."""

    start: int
    end: int
    path: str
    #: "auto", "full", "summary", "lines", "element" or "listing"
    mode: str
    element: str = ""
    first_line: int = 0
    last_line: int = 0

    @property
    def label(self) -> str:
        """The mode as shown in the prompt."""
        if self.mode == "lines":
            return f"lines {self.first_line}-{self.last_line}"
        if self.mode == "element":
            return self.element
        return self.mode


def _looks_like_path(path: str) -> bool:
    return "/" in path or "." in path.lstrip(".") or path.startswith(("~", "."))


def find_refs(text: str) -> list[FileRef]:
    """The references in `text`, in order."""
    if "@" not in text:  # (most messages: no regular expression run)
        return []
    masked = _CODE.sub(lambda m: " " * len(m.group()), text)
    refs = []
    for m in _REF.finditer(masked):
        path = m.group("quoted") or m.group("bare")
        end = m.end()
        mode_text = m.group("mode") or ""
        if m.group("bare") and not mode_text:
            stripped = path.rstrip(_TRAILING)
            end -= len(path) - len(stripped)
            path = stripped
        if not path or (m.group("bare") and not _looks_like_path(path)):
            continue
        if path.endswith("/") and not mode_text:
            refs.append(FileRef(m.start(), end, path, "listing"))
        elif mode_text.startswith("lines:"):
            first, last = (int(n) for n in mode_text[6:].split("-"))
            refs.append(FileRef(m.start(), end, path, "lines", first_line=first, last_line=last))
        elif mode_text in ("full", "summary"):
            refs.append(FileRef(m.start(), end, path, mode_text))
        elif mode_text:
            refs.append(FileRef(m.start(), end, path, "element", element=mode_text))
        else:
            refs.append(FileRef(m.start(), end, path, "auto"))
    return refs
