"""The memory window (Edit ▸ Memory…, Ctrl+Shift+M): what memory across sessions could bring
back into a prompt for some words, each passage with its chat, number and date; open it
where it was said, or have memory forget it (or its whole chat). Forgotten messages stay in
their chat; they only never come back into another."""

import time
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...protocol import requests
from ...protocol.memory import MemoryForget, MemoryHit, MemorySearch
from ...protocol.replies import MemoryForgotten, MemoryHits
from ...protocol.structs import SessionInfo
from . import theme as themes
from .router import Router

#: Hits asked for.
LIMIT = 50


def hit_label(hit: MemoryHit) -> str:
    """`family #2 · user · 2026-11-17 09:12 — My sister Ingrid just moved…`"""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.created))
    text = " ".join(hit.text.split())
    return f"{hit.session_name} #{hit.seq} · {hit.role} · {when} — {text[:160]}{'…' if len(text) > 160 else ''}"


class MemoryView:
    """Its dialog (made when first opened) and the replies it takes."""

    def __init__(self, parent: QWidget, submit: Callable[[requests.Request], None],
                 open_match: Callable[[str, int, str], None]) -> None:
        self.parent = parent
        self.submit = submit
        self.open_match = open_match
        self.dialog: QDialog | None = None
        self.hits: list[MemoryHit] = []
        self.query = ""
        #: What the last forget did, said above the next hits.
        self.notice = ""

    def routes(self, router: Router) -> None:
        router.on_reply(MemoryHits, lambda _, reply: self.show_hits(reply))
        router.on_reply(MemoryForgotten, lambda request, reply: self.forgotten(request, reply))

    def open_for(self, session: SessionInfo | None) -> None:
        """Show the dialog, its search box empty (or as the user left it) for the words to
        look for: a chat's name is no question to memory."""
        if self.dialog is None:
            self._make()
        assert self.dialog is not None
        self.dialog.show()
        self.dialog.raise_()
        self.words.setFocus()
        if self.words.text().strip():
            self.search()

    def _make(self) -> None:
        self.dialog = QDialog(self.parent)
        self.dialog.setWindowTitle("Memory across chats")
        self.dialog.resize(760, 460)
        self.words = QLineEdit(placeholderText="words: what would come back into a prompt?")
        self.words.returnPressed.connect(self.search)
        self.note = themes.label("dim", wrap=True)
        self.list = QListWidget()
        self.list.itemDoubleClicked.connect(lambda _: self.open_selected())
        self.list.currentRowChanged.connect(lambda _: self._buttons())
        self.open_button = QPushButton("Open where it was said")
        self.open_button.clicked.connect(self.open_selected)
        self.forget_button = QPushButton("Forget this message")
        self.forget_button.clicked.connect(lambda: self.forget(whole_chat=False))
        self.forget_chat_button = QPushButton("Forget its whole chat")
        self.forget_chat_button.clicked.connect(lambda: self.forget(whole_chat=True))
        buttons = QHBoxLayout()
        for b in (self.open_button, self.forget_button, self.forget_chat_button):
            buttons.addWidget(b)
        buttons.addStretch()
        layout = QVBoxLayout(self.dialog)
        layout.addWidget(self.words)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.note)
        layout.addLayout(buttons)
        self._buttons()

    def search(self) -> None:
        self.query = self.words.text().strip()
        if self.query:
            self.submit(MemorySearch(query=self.query[:1000], limit=LIMIT))

    def show_hits(self, reply: MemoryHits) -> None:
        if self.dialog is None:
            return
        self.hits = reply.hits
        self.list.clear()
        for hit in reply.hits:
            item = QListWidgetItem(hit_label(hit))
            item.setToolTip(hit.text[:2000])
            item.setData(Qt.ItemDataRole.UserRole, (hit.session_id, hit.seq))
            self.list.addItem(item)
        found = (f"{len(reply.hits)} passage{'s' if len(reply.hits) != 1 else ''} memory could bring back "
                 "(private and forgotten chats are never searched)." if reply.hits else
                 "Nothing in memory matches these words.")
        self.note.setText(" ".join(filter(None, [self.notice, found])))
        self.notice = ""
        self._buttons()

    def _selected(self) -> MemoryHit | None:
        row = self.list.currentRow()
        return self.hits[row] if 0 <= row < len(self.hits) else None

    def _buttons(self) -> None:
        chosen = self._selected() is not None
        for b in (self.open_button, self.forget_button, self.forget_chat_button):
            b.setEnabled(chosen)

    def open_selected(self) -> None:
        hit = self._selected()
        if hit is not None:
            self.open_match(hit.session_id, hit.seq, self.query)

    def forget(self, whole_chat: bool) -> None:
        hit = self._selected()
        if hit is not None:
            self.submit(MemoryForget(session=hit.session_id, seqs=[] if whole_chat else [hit.seq]))

    def forgotten(self, request: MemoryForget, reply: MemoryForgotten) -> None:
        if self.dialog is None:
            return
        what = f"#{', #'.join(map(str, request.seqs))} of" if request.seqs else "the whole chat"
        self.notice = (f"Memory forgot {what} {reply.session.name}: it stays there, and never comes back "
                       "into another chat.")
        self.note.setText(self.notice)
        self.search()
