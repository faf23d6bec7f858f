"""The session list: newest first, the open one highlighted, a search box above it
(names at once; message text through the daemon's search index), rename and delete on
the context menu (F2, Delete)."""

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...protocol.structs import MessageInfo, SearchHit, SessionInfo

#: Milliseconds of no typing before the message text is searched.
SEARCH_DELAY_MS = 250
#: Where a row keeps the seq of its session's newest matching message (-1: none).
MATCH_ROLE = Qt.ItemDataRole.UserRole + 1
#: Characters of a match shown in its row.
SNIPPET_CHARS = 60


def snippet(text: str, query: str) -> str:
    """One line of `text` around the first word of `query` it holds."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    at = min((i for i in (lowered.find(w) for w in query.lower().split()) if i >= 0), default=0)
    start = max(0, at - SNIPPET_CHARS // 3)
    if start:  # whole words: from the start of the word it lands in
        start = flat.rfind(" ", 0, start) + 1
    end = start + SNIPPET_CHARS
    if end < len(flat):
        end = max(flat.rfind(" ", start, end), at + 1)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


class SessionPanel(QWidget):
    """Signals carry session ids; the window turns them into requests."""

    open_requested = Signal(str)
    #: A search result chosen: the session, the matching message's seq, the words searched.
    match_requested = Signal(str, int, str)
    new_requested = Signal()
    rename_requested = Signal(str)
    delete_requested = Signal(str)
    #: The text to search messages for (the window answers with `show_matches`).
    search_requested = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.sessions: list[SessionInfo] = []
        self.current = ""
        #: Message-search results by session: (how many messages match, the newest one).
        self.matches: dict[str, tuple[int, MessageInfo]] = {}
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search (Ctrl+K)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._typed)
        self.new_button = QPushButton("New chat")
        self.new_button.setToolTip("Start a new session (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)
        self.list = QListWidget()
        self.list.setObjectName("sessions")
        # rows wrap to the panel's width and never scroll sideways (a long name is elided)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setWordWrap(True)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
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

    def show_matches(self, query: str, hits: list[SearchHit]) -> None:
        """The daemon's answer to a message search, newest first (ignored when the text
        changed since)."""
        if query == self.search.text().strip():
            matches: dict[str, tuple[int, MessageInfo]] = {}
            for hit in hits:
                count, newest = matches.get(hit.session_id, (0, hit.message))
                matches[hit.session_id] = (count + 1, newest)
            self.matches = matches
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
        for s, depth in as_tree(self.sessions):
            hits, newest = self.matches.get(s.id, (0, None))
            if query and query not in s.name.lower() and not hits:
                continue
            found = f" · {hits} message{'s' if hits != 1 else ''} match" if hits else ""
            busy = " · working…" if s.busy else ""  # answering, or compacting after an answer
            excerpt = f"\n“{snippet(newest.content, query)}”" if newest is not None else ""
            indent = "    " * (depth - 1) + "↳ " if depth else ""
            item = QListWidgetItem(f"{indent}{s.name}\n{indent and ' ' * len(indent)}{s.model} · "
                                   f"{s.message_count} messages{found}{busy}{excerpt}")
            item.setData(Qt.ItemDataRole.UserRole, s.id)
            item.setData(MATCH_ROLE, newest.seq if newest is not None else -1)
            item.setToolTip(f"{s.name} ({s.id})\n{s.next_tokens or s.token_count:,} / {s.window or s.num_ctx:,} tokens")
            self.list.addItem(item)
            if s.id == self.current:
                self.list.setCurrentItem(item)

    def _activated(self, item: QListWidgetItem) -> None:
        seq = item.data(MATCH_ROLE)
        if isinstance(seq, int) and seq >= 0:  # a search result: to the message that matched
            self.match_requested.emit(item.data(Qt.ItemDataRole.UserRole), seq, self.search.text().strip())
        else:
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


def as_tree(sessions: list[SessionInfo]) -> list[tuple[SessionInfo, int]]:
    """The sessions in their order (most recent first), each branch right under the session
    it was taken from (a branch of a deleted one stands on its own): (session, depth)."""
    here = {s.id for s in sessions}
    children: dict[str, list[SessionInfo]] = {}
    for s in sessions:
        if s.branched_from in here and s.branched_from != s.id:
            children.setdefault(s.branched_from, []).append(s)
    out: list[tuple[SessionInfo, int]] = []

    def place(s: SessionInfo, depth: int) -> None:
        out.append((s, depth))
        for child in children.get(s.id, ()):
            place(child, depth + 1)
    for s in sessions:
        if s.branched_from not in here:
            place(s, 0)
    return out

