"""The conversation view: each entry a run of blocks in one document, changed in place.

A streamed piece is inserted at the end of its answer's blocks, so Qt repaints just that
paragraph (entries are not nested frames, whose every change repaints the whole view); an
answer is rendered as Markdown once, when it ends; older history is inserted above as the
reader scrolls up. Nothing re-renders the whole log, so a selection survives streaming, and
the view follows the newest text only while it is scrolled to the bottom."""

import html
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import (
    QDesktopServices,
    QGuiApplication,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)

from .entries import Entry, actions_html, time_title
from .logview import LogView
from .markdown import to_html
from .theme import DARK, Theme
from .thumbnails import add_thumbnail, thumbnails_html


class ChatLog(LogView):
    """Entries oldest first; `stream` grows an answer in place."""

    copied = Signal(str)
    #: A message's action was chosen: its name (edit, retry, pin, unpin, branch, alt) and seq.
    action = Signal(str, int)
    #: An image's bytes are wanted for its thumbnail (its hash).
    image_wanted = Signal(str)
    #: A link to another chat's message was clicked: its session and seq.
    open_message = Signal(str, int)

    def __init__(self, theme: Theme = DARK) -> None:
        super().__init__()
        self.setObjectName("log")
        self.setFrameShape(LogView.Shape.NoFrame)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._link)
        self.theme = theme
        self.entries: list[Entry] = []
        self.code: list[str] = []  # code blocks, for their copy links
        #: Where each entry starts (Qt moves them as the text around them changes).
        self._starts: list[QTextCursor] = []
        self._streams: dict[str, Entry] = {}  # by generation id; recall lines and tool exchanges by id()
        self._recalls: dict[int, Entry] = {}
        self._asked: set[str] = set()  # images whose thumbnails were asked for
        self.document().setDocumentMargin(12)

    def reset(self, has_older: bool = False) -> None:
        self.document().clear()
        self.entries, self.code, self._starts, self._streams, self._recalls = [], [], [], {}, {}
        self.has_older, self.loading_older, self._asked = has_older, False, set()
        self.has_newer, self.loading_newer = False, False

    def add_entry(self, entry: Entry, follow: bool = True) -> None:
        """An entry after the others; the view follows it when at the bottom, unless not
        `follow` (a newer page under what the reader is reading)."""
        with self._keeping_view(follow=follow):
            self._insert(len(self._starts), entry)

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
            entry = self._streams.get(generation_id)
            if entry is None:
                entry = Entry("message", "", role="assistant", note="writing…", who=who)
                self._insert(len(self._starts), entry, body=False)
                self._streams[generation_id] = entry
            entry.text += text
            self._end_of(self._index_of(entry)).insertText(text, QTextCharFormat())

    def end_stream(self, generation_id: str, text: str, note: str = "", who: str = "",
                   seq: int = -1, reply_to: int = -1, created: float = 0.0) -> None:
        """The answer is complete (or stopped — `note` says why —, stored as `seq`):
        rendered as Markdown in its place, with its actions."""
        entry = self._streams.pop(generation_id, None)
        if entry is None:
            if text or note:
                self.add_entry(Entry("message", text, role="assistant", note=note, who=who, seq=seq,
                                  reply_to=reply_to, created=created, whole=not note))
            return
        entry.text, entry.note, entry.who, entry.seq = text, note, who or entry.who, seq
        entry.reply_to, entry.created, entry.whole = reply_to, created, not note
        index = self._index_of(entry)
        with self._keeping_view():
            cursor = self._at(self._starts[index].position())
            cursor.setPosition(self._end_of(index).position(), QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            cursor.setBlockFormat(QTextBlockFormat())
            cursor.insertHtml(self._html(entry))

    def drop_stream(self, generation_id: str) -> None:
        """Take away a streamed answer the history already shows (a session opened while
        it streamed, its events replayed after the page that holds it)."""
        entry = self._streams.pop(generation_id, None)
        if entry is None:
            return
        index = self._index_of(entry)
        with self._keeping_view():
            cursor = self._at(self._starts[index].position() - (1 if index else 0))
            cursor.setPosition(self._end_of(index).position(), QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
        del self._starts[index], self.entries[index]

    def set_theme(self, theme: Theme) -> None:
        """Draw every entry again in the new colours (the only full redraw)."""
        self.theme = theme
        entries, has_older, streams = self.entries, self.has_older, dict(self._streams)
        self.reset(has_older)
        for entry in entries:
            streaming = any(entry is e for e in streams.values())
            self._insert(len(self._starts), entry, body=not streaming)
            if streaming:
                self._end_of(len(self._starts) - 1).insertText(entry.text, QTextCharFormat())
        self._streams = streams
        self.scroll_to_bottom()

    def plain(self) -> str:
        return self.toPlainText()

    def show_message(self, seq: int, words: str = "") -> bool:
        """Scroll to the message `seq` (its top at the view's top) and select the first of
        `words` in it; False when it is not shown."""
        index = next((i for i, e in enumerate(self.entries) if e.seq == seq), -1)
        if index < 0:
            return False
        start = self._at(self._starts[index].position())
        bar = self.verticalScrollBar()
        bar.setValue(bar.value() + self.cursorRect(start).top() - 8)
        for word in words.split():
            found = self.document().find(word, start)
            if not found.isNull() and found.position() <= self._end_of(index).position():
                self.setTextCursor(found)  # selected: where the match is, at a glance
                bar.setValue(bar.value() + self.cursorRect(start).top() - 8)
                break
        return True

    def _insert(self, index: int, entry: Entry, body: bool = True) -> None:
        """Entry `index` from now on: its blocks before entry `index`'s (or at the end)."""
        doc = self.document()
        at_end = index >= len(self._starts)
        if at_end:
            cursor = QTextCursor(doc)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            if self._starts:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        else:
            cursor = self._at(self._starts[index].position())
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())  # entry `index` moves on
            cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
            self._starts[index].setPosition(cursor.position() + 1)
        start = self._at(cursor.position())
        start.setKeepPositionOnInsert(True)  # stays at the entry's start as it is written
        cursor.insertHtml(self._html(entry) if body else self._header(entry))
        if not body:
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        if entry.kind == "marker":  # insertHtml into an existing block keeps its alignment
            centred = QTextBlockFormat()
            centred.setAlignment(Qt.AlignmentFlag.AlignHCenter)
            centred.setTopMargin(12)
            centred.setBottomMargin(4)
            cursor.setPosition(start.position(), QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeBlockFormat(centred)
        self._starts.insert(index, start)
        self.entries.insert(index, entry)

    def _index_of(self, entry: Entry) -> int:
        """Where a streaming entry is: searched from the newest end, where answers being
        written are, so that a piece costs the same however long the log."""
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i] is entry:
                return i
        raise ValueError("not in the log")

    def _at(self, position: int) -> QTextCursor:
        """A fresh cursor at `position`, with no selection (copies of a cursor share its
        anchor, which text inserted there moves)."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        return cursor

    def _end_of(self, index: int) -> QTextCursor:
        """A cursor at the end of entry `index`'s text."""
        if index + 1 < len(self._starts):
            return self._at(self._starts[index + 1].position() - 1)
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _header(self, entry: Entry) -> str:
        t = self.theme
        who = entry.who or {"user": "You", "assistant": "Model"}.get(entry.role, entry.role.title())
        colour = t.user if entry.role == "user" else t.model
        note = f' &nbsp;<span style="color:{t.dim};">{html.escape(entry.note)}</span>' if entry.note else ""
        return (f'<p style="margin-top: 16px; margin-bottom: 0;"><b style="color:{colour};"'
                f'{time_title(entry)}>{html.escape(who)}</b>{note}{actions_html(entry, t.dim)}</p>')

    def _html(self, entry: Entry) -> str:
        if entry.kind == "marker":  # centred by its block format (`_insert`)
            return f'<p style="color:{self.theme.dim};">{html.escape(entry.text)}</p>'
        if entry.kind in ("recall", "fold"):  # a small line (recall, a tool exchange); a click opens it
            key = id(entry)
            self._recalls[key] = entry
            arrow = "▾" if entry.expanded else "▸"
            line = (f'<p style="margin-top: 10px; margin-bottom: 0; color:{self.theme.dim};">'
                    f'<a href="recall:{key}" style="color:{self.theme.dim}; text-decoration: none;">'
                    f'{arrow} {html.escape(entry.text)}</a></p>')
            if not entry.expanded:
                return line
            rows = "".join(f'<div><a href="open:{entry.links[n][0]}:{entry.links[n][1]}" style="color:{self.theme.dim};">'
                           f"{html.escape(row)}</a></div>" if n in entry.links else f"<div>{html.escape(row)}</div>"
                           for n, row in enumerate(entry.details.splitlines()))
            return line + f'<div style="color:{self.theme.dim}; margin-left: 16px;">{rows}</div>'
        return self._header(entry) + to_html(entry.text, self.theme, self._keep_code) + thumbnails_html(
            self.document(), entry.images, self._asked, self.image_wanted.emit, self.theme.dim)

    def add_thumbnail(self, digest: str, data: str) -> None:
        """An image's bytes arrived: its thumbnail drawn in every entry that holds it."""
        for entry in [e for e in self.entries if digest in e.images] if add_thumbnail(self.document(), digest, data) else []:
            self.redraw(entry)

    def toggle(self, entry: Entry) -> None:
        """Open or close a recall line, or a tool exchange's."""
        entry.expanded = not entry.expanded
        self.redraw(entry)

    def redraw(self, entry: Entry) -> None:
        """Draw an entry again, in its place (it changed: another alternative, a pin)."""
        index = self.entries.index(entry)
        with self._keeping_view():
            cursor = self._at(self._starts[index].position())
            cursor.setPosition(self._end_of(index).position(), QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            cursor.insertHtml(self._html(entry))

    def _keep_code(self, code: str) -> int:
        self.code.append(code)
        return len(self.code) - 1

    @contextmanager
    def _keeping_view(self, prepended: bool = False, follow: bool = True) -> Iterator[None]:
        bar = self.verticalScrollBar()
        follow, value, height = follow and self.at_bottom(), bar.value(), bar.maximum()
        yield
        if prepended:
            bar.setValue(value + bar.maximum() - height)
        elif follow:
            bar.setValue(bar.maximum())
        else:
            bar.setValue(value)

    def _link(self, url: QUrl) -> None:
        if url.scheme() == "recall":
            entry = self._recalls.get(int(url.path()) if url.path().isdigit() else -1)
            if entry is not None and entry in self.entries:
                self.toggle(entry)
        elif url.scheme() == "act":
            name, _, seq = url.path().partition(":")
            if not seq.isdigit():
                return
            if name == "copy":
                entry = next((e for e in self.entries if e.seq == int(seq)), None)
                if entry is not None:
                    QGuiApplication.clipboard().setText(entry.text)
                    self.copied.emit(entry.text)
            else:
                self.action.emit(name, int(seq))
        elif url.scheme() == "open":  # another chat's message, recalled by memory
            session, _, seq = url.path().partition(":")
            if seq.isdigit():
                self.open_message.emit(session, int(seq))
        elif url.scheme() == "copy":
            index = int(url.path()) if url.path().isdigit() else -1
            if 0 <= index < len(self.code):
                QGuiApplication.clipboard().setText(self.code[index])
                self.copied.emit(self.code[index])
        else:
            QDesktopServices.openUrl(url)
