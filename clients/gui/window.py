"""The main window: the session list and the open chat side by side (a splitter), menus
and shortcuts, the reconnect banner, and an empty state that says how to begin."""

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...protocol import requests
from ...protocol.events import (
    ModelPullProgress,
    ModelPullResult,
    SessionCreated,
    SessionDeleted,
    SessionUpdated,
)
from ...protocol.replies import Accepted, ModelsReply, SearchReply, SessionReply, SessionsReply
from ...protocol.structs import ModelInfo, SessionInfo
from . import theme as themes
from .chatview import ChatView
from .dialogs import NewSessionDialog
from .memory_view import MemoryView
from .menus import build_menus
from .prompt_view import PromptView
from .router import Router
from .sessions import SessionPanel
from .worker import DaemonWorker


class MainWindow(QMainWindow):
    """One window on the daemon; any number may be open, on the same session or not."""

    #: The window shows what it will show (a session's last page, or the empty state).
    ready = Signal()

    def __init__(self, worker: DaemonWorker, session: str = "", theme: str = "system") -> None:
        super().__init__()
        self.worker = worker
        self.wanted_session = session
        #: A search result being opened: (session id, the matching message's seq, the words).
        self.wanted_match: tuple[str, int, str] | None = None
        self.theme_choice = theme
        self.theme = themes.pick(theme)
        self.models: list[ModelInfo] = []
        self.default_model = ""
        self.models_problem = ""
        self.dialog: NewSessionDialog | None = None
        self.setWindowTitle("ctxkeep")
        self.resize(1100, 720)
        self.setMinimumSize(560, 400)

        self.banner = themes.label("banner", wrap=True)
        self.banner.hide()
        self.panel = SessionPanel()
        self.chat = ChatView(self.worker.submit, self.theme)
        self.chat.status.connect(self.say)
        self.chat.open_message.connect(lambda sid, seq: self.open_match(sid, seq, ""))
        self.chat.shown.connect(self.ready)
        self.empty, self.empty_text = self._empty_page()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self.chat)
        self.splitter = QSplitter()
        self.splitter.addWidget(self.panel)
        self.splitter.addWidget(self.stack)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([250, 850])
        self.splitter.setChildrenCollapsible(False)
        root = QWidget()
        outer = QVBoxLayout(root)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.banner)
        outer.addWidget(self.splitter, 1)
        self.setCentralWidget(root)
        self._empty("Connecting to ctxkeepd…")
        build_menus(self)
        self.apply_theme()
        QGuiApplication.styleHints().colorSchemeChanged.connect(lambda _: self.apply_theme())

        self.panel.open_requested.connect(self.open_session)
        self.panel.match_requested.connect(self.open_match)
        self.panel.new_requested.connect(self.new_session)
        self.panel.rename_requested.connect(self.rename)
        self.panel.delete_requested.connect(self.delete)
        self.panel.search_requested.connect(lambda q: self.worker.submit(requests.Search(query=q, limit=500)))
        worker.heard.connect(self.on_event)
        self.router = Router(self.say)
        self.memory = MemoryView(self, self.worker.submit, self.open_match)
        self.prompt = PromptView(self, self.worker.submit)
        self._routes()
        worker.reply.connect(self.router.reply)
        worker.failed.connect(self.router.failed)
        worker.connection.connect(self.on_connection)

    def _empty_page(self) -> tuple[QWidget, QLabel]:
        """The page shown with no session open: a line of text and a "New chat" button."""
        page = QWidget()
        text = themes.label("empty", wrap=True)
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        start = QPushButton("New chat")
        start.clicked.connect(self.new_session)
        box = QVBoxLayout(page)
        box.addStretch()
        box.addWidget(text)
        box.addWidget(start, alignment=Qt.AlignmentFlag.AlignHCenter)
        box.addStretch()
        return page, text

    # -- menus, theme ----------------------------------------------------------------------

    def set_theme(self, choice: str) -> None:
        self.theme_choice = choice
        self.apply_theme()

    def apply_theme(self) -> None:
        self.theme = themes.pick(self.theme_choice)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            themes.apply(app, self.theme)
        self.chat.gauge.set_theme(self.theme.border, self.theme.text)
        if self.chat.log.theme != self.theme:
            self.chat.log.set_theme(self.theme)

    def say(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    def focus_search(self) -> None:
        self.panel.search.setFocus()
        self.panel.search.selectAll()

    def _empty(self, text: str) -> None:
        self.empty_text.setText(text)
        self.stack.setCurrentWidget(self.empty)

    # -- actions ------------------------------------------------------------------------------

    def new_session(self) -> None:
        self.worker.submit(requests.ModelsList())  # fresh facts for the dialog
        self.dialog = NewSessionDialog(self, self.models, self.default_model, self.models_problem)
        self.dialog.pull_requested.connect(lambda name: self.worker.submit(requests.ModelsPull(model=name)))
        if self.dialog.exec():
            name, model, system = self.dialog.values()
            self.worker.submit(requests.SessionCreate(name=name, model=model, system=system,
                                                      force=bool(self.models_problem)))
        self.dialog = None

    def open_session(self, ref: str) -> None:
        self.wanted_match = None
        self.worker.submit(requests.SessionGet(session=ref))

    def open_match(self, ref: str, seq: int, words: str) -> None:
        """Open a session at a message that matched a search, its words selected."""
        self.worker.submit(requests.SessionGet(session=ref))
        self.wanted_match = (ref, seq, words)

    def rename(self, sid: str) -> None:
        current = next((s for s in self.panel.sessions if s.id == sid), None)
        if current is None:
            return
        name, ok = QInputDialog.getText(self, "Rename chat", "New name:", text=current.name)
        if ok and name.strip() and name.strip() != current.name:
            self.worker.submit(requests.SessionRename(session=sid, name=name.strip()))

    def delete(self, sid: str) -> None:
        current = next((s for s in self.panel.sessions if s.id == sid), None)
        if current is None:
            return
        answer = QMessageBox.question(
            self, "Delete chat", f"Delete “{current.name}” and its whole history "
                                 f"({current.message_count} messages)? This cannot be undone.")
        if answer == QMessageBox.StandardButton.Yes:
            self.worker.submit(requests.SessionDelete(session=sid))

    def undo_compaction(self) -> None:
        if self.chat.session is not None:
            self.worker.submit(requests.SnapshotRestore(session=self.chat.session.id))

    # -- what the worker hears ------------------------------------------------------------------

    def on_connection(self, connected: bool, message: str) -> None:
        if connected:
            self.banner.hide()
            self.say("Connected to ctxkeepd")
            for request in (requests.SessionList(), requests.ModelsList()):
                self.worker.submit(request)
            if self.chat.session is not None:
                self.open_session(self.chat.session.id)
        else:
            self.banner.setText(f"{message}. Reconnecting by itself once it is up — anything "
                                "you type stays in the box until then.")
            self.banner.show()

    def _routes(self) -> None:
        """The replies and failures the window itself takes (the chat view routes its own)."""
        r = self.router
        r.on_reply(SessionsReply, lambda _, reply: self._sessions(reply.sessions))
        r.on_reply(SessionReply, self._session_reply)
        r.on_reply(Accepted, self._accepted)
        r.on_reply(ModelsReply, lambda _, reply: self._models(reply))
        r.on_reply(SearchReply, lambda request, reply: self.panel.show_matches(request.query, reply.hits))
        r.on_failure(requests.ModelsList, lambda _, message: self._models(None, message))
        self.chat.routes(r)
        self.memory.routes(r)
        self.prompt.routes(r)

    def _sessions(self, sessions: list[SessionInfo]) -> None:
        self.panel.fill(sessions)
        if self.chat.session is None:
            if self.wanted_session or sessions:
                self.open_session(self.wanted_session or sessions[0].id)
            else:
                self._empty("No chats yet.\nStart one with New chat (Ctrl+N).")
                self.ready.emit()

    def _session_reply(self, request: requests.Request, reply: SessionReply) -> None:
        if isinstance(request, (requests.SessionGet, requests.SessionCreate, requests.Branch)):
            self.show_session(reply.session)
            if isinstance(request, requests.Branch):
                self.say(f"A new branch, {reply.session.name}: the history up to #{reply.session.branched_at}")
        elif self.chat.session and reply.session.id == self.chat.session.id:
            self.chat.show_info(reply.session)
            self.chat.done(request)  # a pin, an unpin, an answer switched

    def _accepted(self, request: requests.Request, reply: Accepted) -> None:
        if isinstance(request, requests.Send):
            self.chat.sent(True, request=request)
        elif self.chat.session is not None and reply.session_id != self.chat.session.id:
            self.say(" ".join(reply.warnings))  # an earlier question, edited: in a branch
            self.open_session(reply.session_id)

    def _models(self, reply: ModelsReply | None, problem: str = "") -> None:
        if reply is not None:
            self.models, self.default_model = reply.models, reply.default_model
            self.chat.set_models(reply.models)
        self.models_problem = problem
        if self.dialog is not None:
            self.dialog.set_models(self.models, self.default_model, problem)

    def show_session(self, session: SessionInfo) -> None:
        self.setWindowTitle(f"{session.name} — ctxkeep")
        self.stack.setCurrentWidget(self.chat)
        self.panel.set_current(session.id)
        match, self.wanted_match = self.wanted_match, None
        if match is not None and match[0] == session.id:
            self.chat.open(session, at=match[1], find=match[2])
        else:
            self.chat.open(session)
        self.chat.composer.setFocus()

    def on_event(self, topic: str, event: object) -> None:
        if isinstance(event, (SessionCreated, SessionUpdated, SessionDeleted)):
            self.worker.submit(requests.SessionList())
            if isinstance(event, SessionDeleted) and self.chat.session and event.session_id == self.chat.session.id:
                self.chat.session = None  # by another client, or this window
                self._empty("The chat was deleted.")
            if isinstance(event, SessionUpdated) and self.chat.session and event.session.id == self.chat.session.id:
                self.chat.show_info(event.session)
                self.setWindowTitle(f"{event.session.name} — ctxkeep")
            return
        if isinstance(event, (ModelPullProgress, ModelPullResult)):
            self._pull_event(event)
            return
        if self.chat.session is not None and getattr(event, "session_id", "") == self.chat.session.id:
            self.chat.on_event(event)

    def _pull_event(self, event: ModelPullProgress | ModelPullResult) -> None:
        if isinstance(event, ModelPullProgress):
            if self.dialog is not None:
                self.dialog.show_progress(event.status, event.completed, event.total)
            return
        if self.dialog is not None:
            self.dialog.pull_ended(event.status == "ok", event.message)
        self.say(f"Pulled {event.model}" if event.status == "ok" else f"Could not pull {event.model}: {event.message}")
        self.worker.submit(requests.ModelsList())
