"""The session list: newest first, the open one highlighted, a search box above it
(names at once; message text through the daemon's search index), rename and delete on
the context menu (F2, Delete)."""

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout, QLineEdit, QListWidget, QListWidgetItem, QMenu, QPushButton, QVBoxLayout,
    QWidget,
)

from ...protocol.models import SessionInfo

#: Milliseconds of no typing before the message text is searched.
SEARCH_DELAY_MS = 250


class SessionPanel(QWidget):
    """Signals carry session ids; the window turns them into requests."""

    open_requested = Signal(str)
    new_requested = Signal()
    rename_requested = Signal(str)
    delete_requested = Signal(str)
    #: The text to search messages for (the window answers with `show_matches`).
    search_requested = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.sessions: list[SessionInfo] = []
        self.current = ""
        self.matches: dict[str, int] = {}
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search (Ctrl+K)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._typed)
        self.new_button = QPushButton("New chat")
        self.new_button.setToolTip("Start a new session (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)
        self.list = QListWidget()
        self.list.setObjectName("sessions")
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)
        self._timer = QTimer(self, singleShot=True, interval=SEARCH_DELAY_MS)
        self._timer.timeout.connect(lambda: self.search_requested.emit(self.search.text().strip()))
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.new_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 4, 8)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)
        self.setMinimumWidth(160)

    def fill(self, sessions: list[SessionInfo]) -> None:
        self.sessions = sessions
        self._refill()

    def set_current(self, session_id: str) -> None:
        self.current = session_id
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == session_id:
                self.list.setCurrentItem(item)
                return
        self.list.clearSelection()

    def show_matches(self, query: str, counts: dict[str, int]) -> None:
        """The daemon's answer to a message search (ignored when the text changed since)."""
        if query == self.search.text().strip():
            self.matches = counts
            self._refill()

    def selected_id(self) -> str:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item else self.current

    def _typed(self, text: str) -> None:
        self.matches = {}
        self._refill()
        if len(text.strip()) >= 2:
            self._timer.start()
        else:
            self._timer.stop()

    def _refill(self) -> None:
        query = self.search.text().strip().lower()
        self.list.clear()
        for s in self.sessions:
            hits = self.matches.get(s.id, 0)
            if query and query not in s.name.lower() and not hits:
                continue
            found = f" · {hits} message{'s' if hits != 1 else ''} match" if hits else ""
            busy = " · answering…" if s.busy else ""
            item = QListWidgetItem(f"{s.name}\n{s.model} · {s.message_count} messages{found}{busy}")
            item.setData(Qt.ItemDataRole.UserRole, s.id)
            item.setToolTip(f"{s.name} ({s.id})\n{s.token_count:,} / {s.window or s.num_ctx:,} tokens")
            self.list.addItem(item)
            if s.id == self.current:
                self.list.setCurrentItem(item)

    def _activated(self, item: QListWidgetItem) -> None:
        self.open_requested.emit(item.data(Qt.ItemDataRole.UserRole))

    def _menu(self, at: QPoint) -> None:
        item = self.list.itemAt(at)
        if item is None:
            return
        sid = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction("Open", lambda: self.open_requested.emit(sid))
        menu.addAction("Rename…", lambda: self.rename_requested.emit(sid))
        menu.addAction("Delete…", lambda: self.delete_requested.emit(sid))
        menu.exec(self.list.mapToGlobal(at))
