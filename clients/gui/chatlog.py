"""The conversation view: one QTextFrame per entry, changed in place.

A streamed piece is inserted at the end of its answer's frame (its cost does not grow with
the session); an answer is rendered as Markdown once, when it ends; older history is
inserted above as the reader scrolls up. Nothing re-renders the whole log, so the reader's
selection survives streaming, and the view follows the newest text only while it is
scrolled to the bottom.
"""

import html
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import (
    QColor, QDesktopServices, QGuiApplication, QTextCharFormat, QTextCursor, QTextFrame,
    QTextFrameFormat,
)
from PySide6.QtWidgets import QTextBrowser

from .markdown import to_html
from .theme import DARK, Theme

#: The widest the text runs, in pixels; wider windows get margins.
MAX_TEXT_WIDTH = 860
#: Pixels from the top at which older history is asked for.
NEAR_TOP = 48


@dataclass
class Entry:
    """What one frame shows: a message (`role`, `text`, a `note` beside the name) or a
    `marker` line."""

    kind: str  # "message" | "marker"
    text: str
    role: str = ""
    note: str = ""
    who: str = ""


class ChatLog(QTextBrowser):
    """Entries oldest first; `stream` grows an answer in place."""

    older_wanted = Signal()
    copied = Signal(str)

    def __init__(self, theme: Theme = DARK) -> None:
        super().__init__()
        self.setObjectName("log")
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._link)
        self.theme = theme
        self.entries: list[Entry] = []
        self.code: list[str] = []
        self._frames: list[QTextFrame] = []
        self._streams: dict[str, tuple[QTextFrame, Entry]] = {}
        self.has_older = False
        self.loading_older = False
        self.document().setDocumentMargin(12)
        self.verticalScrollBar().valueChanged.connect(self._scrolled)

    # -- what the window calls ------------------------------------------------------------

    def reset(self, has_older: bool = False) -> None:
        self.document().clear()
        self.entries, self.code, self._frames, self._streams = [], [], [], {}
        self.has_older, self.loading_older = has_older, False

    def append(self, entry: Entry) -> None:
        with self._keeping_view():
            self._insert(len(self._frames), entry)

    def prepend(self, entries: list[Entry], has_older: bool) -> None:
        """Older history above what is shown; the reader's view does not move."""
        with self._keeping_view(prepended=True):
            for entry in reversed(entries):
                self._insert(0, entry)
        self.has_older, self.loading_older = has_older, False
        self.want_more_if_short()

    def stream(self, generation_id: str, text: str, who: str = "") -> None:
        """Add a streamed piece to its answer (started on the first piece)."""
        with self._keeping_view():
            if generation_id not in self._streams:
                entry = Entry("message", "", role="assistant", note="writing…", who=who)
                frame = self._insert(len(self._frames), entry, body=False)
                self._streams[generation_id] = (frame, entry)
            frame, entry = self._streams[generation_id]
            entry.text += text
            frame.lastCursorPosition().insertText(text, QTextCharFormat())

    def end_stream(self, generation_id: str, text: str, note: str = "", who: str = "") -> None:
        """The answer is complete (or stopped): rendered as Markdown in its frame."""
        frame_entry = self._streams.pop(generation_id, None)
        if frame_entry is None:
            if text or note:
                self.append(Entry("message", text, role="assistant", note=note, who=who))
            return
        frame, entry = frame_entry
        entry.text, entry.note, entry.who = text, note, who or entry.who
        with self._keeping_view():
            cursor = frame.firstCursorPosition()
            cursor.setPosition(frame.lastCursorPosition().position(), QTextCursor.MoveMode.KeepAnchor)
            cursor.insertHtml(self._html(entry))

    def set_theme(self, theme: Theme) -> None:
        """Draw every entry again in the new colours (the only full redraw)."""
        self.theme = theme
        entries, has_older, streams = self.entries, self.has_older, dict(self._streams)
        self.reset(has_older)
        for entry in entries:
            self._insert(len(self._frames), entry)
        for gid, (_, entry) in streams.items():
            self._streams[gid] = (self._frames[entries.index(entry)], entry)
        self.scroll_to_bottom()

    def plain(self) -> str:
        return self.toPlainText()

    def at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def scroll_to_bottom(self) -> None:
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def want_more_if_short(self) -> None:
        """Ask for older history while the view is not yet full."""
        if self.has_older and not self.loading_older and self.verticalScrollBar().maximum() == 0:
            self.loading_older = True
            self.older_wanted.emit()

    # -- inside ------------------------------------------------------------------------

    def _insert(self, index: int, entry: Entry, body: bool = True) -> QTextFrame:
        root = self.document().rootFrame()
        cursor = (root.lastCursorPosition() if index >= len(self._frames)
                  else self._frames[index].firstCursorPosition())
        if index < len(self._frames):  # the block just before that frame
            cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
        frame = cursor.insertFrame(self._format(entry))
        frame.firstCursorPosition().insertHtml(self._html(entry) if body else self._header(entry))
        if not body:
            frame.lastCursorPosition().insertBlock()
        self._frames.insert(index, frame)
        self.entries.insert(index, entry)
        return frame

    def _format(self, entry: Entry) -> QTextFrameFormat:
        f = QTextFrameFormat()
        f.setPadding(8 if entry.kind == "message" else 2)
        f.setBottomMargin(6)
        if entry.kind == "message" and entry.role == "user":
            f.setBackground(QColor(self.theme.raised))
        return f

    def _header(self, entry: Entry) -> str:
        t = self.theme
        who = entry.who or {"user": "You", "assistant": "Model"}.get(entry.role, entry.role.title())
        colour = t.user if entry.role == "user" else t.model
        note = f' &nbsp;<span style="color:{t.dim};">{html.escape(entry.note)}</span>' if entry.note else ""
        return f'<p style="margin: 0;"><b style="color:{colour};">{html.escape(who)}</b>{note}</p>'

    def _html(self, entry: Entry) -> str:
        if entry.kind == "marker":
            return (f'<p align="center" style="color:{self.theme.dim};">'
                    f'{html.escape(entry.text)}</p>')
        return self._header(entry) + to_html(entry.text, self.theme, self._keep_code)

    def _keep_code(self, code: str) -> int:
        self.code.append(code)
        return len(self.code) - 1

    @contextmanager
    def _keeping_view(self, prepended: bool = False) -> Iterator[None]:
        bar = self.verticalScrollBar()
        follow, value, height = self.at_bottom(), bar.value(), bar.maximum()
        yield
        if prepended:
            bar.setValue(value + bar.maximum() - height)
        elif follow:
            bar.setValue(bar.maximum())

    def _scrolled(self, value: int) -> None:
        if value <= NEAR_TOP and self.has_older and not self.loading_older:
            self.loading_older = True
            self.older_wanted.emit()

    def _link(self, url: QUrl) -> None:
        if url.scheme() == "copy":
            index = int(url.path() or -1)
            if 0 <= index < len(self.code):
                QGuiApplication.clipboard().setText(self.code[index])
                self.copied.emit(self.code[index])
        else:
            QDesktopServices.openUrl(url)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name (the viewport's resize)
        side = max(0, (self.width() - MAX_TEXT_WIDTH) // 2)
        if self.viewportMargins().left() != side:
            self.setViewportMargins(side, 0, side, 0)
        super().resizeEvent(event)
