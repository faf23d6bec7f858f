"""The main window: sessions, the chat log, the input box, and the gauge in the sidebar."""

import html
import os
import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem, QMainWindow, QPushButton,
    QTextBrowser, QToolButton, QVBoxLayout, QWidget,
)

from ...protocol import requests
from ...protocol.events import (
    CompactionRequest, CompactionResult, ContextUsage, GenerationError, GenerationToken,
    QueryReceived, ResponseGeneration, SessionCreated, SessionDeleted, SessionUpdated,
)
from ...protocol.models import MessageInfo, SessionInfo
from ...protocol.replies import HistoryReply, SessionReply, SessionsReply
from .gauge import ContextGauge
from .worker import DaemonWorker

STYLE = """
QMainWindow, QWidget { background: #25292d; color: #d0d4d8; }
QTextBrowser { background: #1c1f22; border: none; padding: 8px; }
QListWidget { background: #202326; border: none; }
QLineEdit { background: #1c1f22; border: 1px solid #3a3f44; padding: 6px; }
QToolButton, QPushButton { background: #30353a; border: none; padding: 6px; }
QLabel#banner { background: #7a3b3b; color: white; padding: 8px; }
"""
_FENCE = re.compile(r"```(\w*)\n(.*?)(?:```|\Z)", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")


def format_text(text: str) -> str:
    """Message text as HTML: fenced code blocks in a monospace panel, inline code marked."""
    out, last = [], 0
    for m in _FENCE.finditer(text):
        out.append(_prose(text[last:m.start()]))
        out.append('<pre style="background:#2b3035; color:#e6e6e6; padding:6px; '
                   f'font-family:monospace;">{html.escape(m.group(2).rstrip())}</pre>')
        last = m.end()
    out.append(_prose(text[last:]))
    return "".join(out)


def _prose(text: str) -> str:
    escaped = html.escape(text.strip("\n"))
    escaped = _INLINE.sub(r'<code style="background:#2b3035;">\1</code>', escaped)
    return escaped.replace("\n", "<br>") if escaped else ""


class ChatLog(QTextBrowser):
    """The conversation: finished entries, plus the answer streaming in."""

    def __init__(self) -> None:
        super().__init__()
        self.setOpenExternalLinks(True)
        self.entries: list[str] = []
        self.streaming: dict[str, str] = {}

    def clear_log(self) -> None:
        self.entries.clear()
        self.streaming.clear()
        self._render()

    def add_message(self, role: str, text: str, note: str = "") -> None:
        who = {"user": "you", "assistant": "model"}.get(role, role)
        colour = "#8fb8de" if role == "user" else "#7ec8a4"
        extra = f' <span style="color:#888;">{html.escape(note)}</span>' if note else ""
        self.entries.append(f'<p><b style="color:{colour};">{who}</b>{extra}<br>{format_text(text)}</p>')
        self._render()

    def add_marker(self, text: str) -> None:
        """A centred, dimmed separator line (seed 000's compaction marker)."""
        self.entries.append(f'<p align="center" style="color:#7d8288;">{html.escape(text)}</p>')
        self._render()

    def stream(self, generation_id: str, text: str) -> None:
        self.streaming[generation_id] = self.streaming.get(generation_id, "") + text
        self._render()

    def end_stream(self, generation_id: str) -> None:
        self.streaming.pop(generation_id, None)

    def _render(self) -> None:
        live = "".join(f'<p><b style="color:#7ec8a4;">model</b><br>{format_text(t)}▍</p>'
                       for t in self.streaming.values())
        self.setHtml("".join(self.entries) + live)
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def plain(self) -> str:
        return self.toPlainText()


class MainWindow(QMainWindow):
    """One window on the daemon; any number may be open, on the same session or not."""

    def __init__(self, worker: DaemonWorker, session: str = "") -> None:
        super().__init__()
        self.worker = worker
        self.wanted_session = session
        self.session: SessionInfo | None = None
        self.sessions: dict[str, SessionInfo] = {}
        self.setWindowTitle("ctxkeep")
        self.resize(900, 600)
        self.setStyleSheet(STYLE)

        self.banner = QLabel()
        self.banner.setObjectName("banner")
        self.banner.setWordWrap(True)
        self.banner.hide()

        self.conversations = QToolButton()
        # seed 000's 💬, where the font has it
        self.conversations.setText("💬" if QFontMetrics(self.font()).inFontUcs4(0x1F4AC) else "☰")
        self.conversations.setToolTip("conversations")
        self.conversations.clicked.connect(lambda: self.session_list.setVisible(not self.session_list.isVisible()))
        self.gauge = ContextGauge(8192)
        self.gauge.compact_requested.connect(self.compact)
        self.new_button = QToolButton()
        self.new_button.setText("⟳")
        self.new_button.setToolTip("new session")
        self.new_button.clicked.connect(self.new_session)
        sidebar = QVBoxLayout()
        for widget in (self.conversations, self.gauge, self.new_button):
            sidebar.addWidget(widget, alignment=Qt.AlignmentFlag.AlignHCenter)
        sidebar.addStretch()

        self.session_list = QListWidget()
        self.session_list.setFixedWidth(200)
        self.session_list.itemClicked.connect(lambda item: self.open_session(item.data(Qt.ItemDataRole.UserRole)))

        self.log = ChatLog()
        self.input = QLineEdit()
        self.input.setPlaceholderText("Message (Enter sends; @path attaches a file)")
        self.input.returnPressed.connect(self.send)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self.send)
        self.status = QLabel("connecting…")
        self.status.setStyleSheet("color:#8a9096;")
        entry = QHBoxLayout()
        entry.addWidget(self.input)
        entry.addWidget(self.send_button)
        chat = QVBoxLayout()
        chat.addWidget(self.log)
        chat.addLayout(entry)
        chat.addWidget(self.status)

        body = QHBoxLayout()
        body.addLayout(sidebar)
        body.addWidget(self.session_list)
        body.addLayout(chat, 1)
        outer = QVBoxLayout()
        outer.addWidget(self.banner)
        outer.addLayout(body, 1)
        root = QWidget()
        root.setLayout(outer)
        self.setCentralWidget(root)

        worker.event.connect(self.on_event)
        worker.reply.connect(self.on_reply)
        worker.failed.connect(self.on_failed)
        worker.connection.connect(self.on_connection)

    # -- actions ------------------------------------------------------------------

    def new_session(self) -> None:
        self.worker.submit(requests.SessionCreate())

    def open_session(self, ref: str) -> None:
        self.worker.submit(requests.SessionGet(session=ref))

    def send(self) -> None:
        text = self.input.text().strip()
        if not text or self.session is None:
            return
        self.input.clear()
        self.worker.submit(requests.Send(session=self.session.id, text=text, cwd=os.getcwd()))

    def compact(self) -> None:
        if self.session is not None:
            self.worker.submit(requests.Compact(session=self.session.id, requested_by="gui"))

    # -- what the worker hears --------------------------------------------------------

    def on_connection(self, connected: bool, message: str) -> None:
        if connected:
            self.banner.hide()
            self.status.setText("connected")
            self.worker.submit(requests.SessionList())
            if self.session is not None:
                self.open_session(self.session.id)
        else:
            self.banner.setText(f"{message}. Reconnecting by itself once it is up…")
            self.banner.show()
            self.status.setText("not connected")

    def on_failed(self, request: requests.Request, message: str) -> None:
        self.status.setText(f"error: {message}")

    def on_reply(self, request: requests.Request, reply: object) -> None:
        if isinstance(reply, SessionsReply):
            self.fill_sessions(reply.sessions)
            if self.session is None and (self.wanted_session or reply.sessions):
                self.open_session(self.wanted_session or reply.sessions[0].id)
        elif isinstance(reply, SessionReply):
            self.show_session(reply.session)
            if isinstance(request, (requests.SessionGet, requests.SessionCreate)):
                self.log.clear_log()
                self.worker.submit(requests.History(session=reply.session.id, limit=1000))
        elif isinstance(reply, HistoryReply) and self.session and reply.session_id == self.session.id:
            for m in reply.messages:
                self.add_history(m)
            if reply.next is not None:
                self.worker.submit(requests.History(session=reply.session_id, start=reply.next, limit=1000))

    def fill_sessions(self, sessions: list[SessionInfo]) -> None:
        self.sessions = {s.id: s for s in sessions}
        self.session_list.clear()
        for s in sessions:
            item = QListWidgetItem(f"{s.name}\n{s.model} · {s.message_count} msgs")
            item.setData(Qt.ItemDataRole.UserRole, s.id)
            self.session_list.addItem(item)
            if self.session and s.id == self.session.id:
                self.session_list.setCurrentItem(item)

    def show_session(self, session: SessionInfo) -> None:
        self.session = session
        self.setWindowTitle(f"ctxkeep — {session.name}")
        self.gauge.set_window(session.window or session.num_ctx)
        self.gauge.set_tokens(session.token_count, session.token_count_exact)
        self.status.setText(f"{session.name} · {session.model}")

    def add_history(self, m: MessageInfo) -> None:
        if m.kind == "summary":
            self.log.add_marker(f"── summary of the earlier conversation ──\n{m.content}")
        elif m.status == "interrupted":
            self.log.add_message(m.role, m.content, f"[interrupted: {m.error}]")
        else:
            self.log.add_message(m.role, m.content)

    def on_event(self, topic: str, event: object) -> None:
        if isinstance(event, (SessionCreated, SessionUpdated, SessionDeleted)):
            self.worker.submit(requests.SessionList())
            if isinstance(event, SessionUpdated) and self.session and event.session.id == self.session.id:
                self.session = event.session
            return
        if self.session is None or getattr(event, "session_id", "") != self.session.id:
            return
        if isinstance(event, QueryReceived):
            self.log.add_message("user", event.message.content)
        elif isinstance(event, GenerationToken):
            self.log.stream(event.generation_id, event.text)
        elif isinstance(event, ResponseGeneration):
            self.log.end_stream(event.generation_id)
            self.log.add_message("assistant", event.message.content)
            self.gauge.set_window(event.window)
            self.gauge.set_tokens(event.token_count, exact=True)
        elif isinstance(event, GenerationError):
            self.log.end_stream(event.generation_id)
            self.log.add_message("assistant", event.partial, f"[{event.code}] {event.message}")
        elif isinstance(event, CompactionRequest):
            self.gauge.set_compacting(True)
            self.status.setText(f"compacting {event.messages} messages…")
        elif isinstance(event, CompactionResult):
            self.gauge.set_compacting(False)
            if event.status == "ok":
                self.log.add_marker(event.marker)
                self.gauge.set_tokens(event.tokens_after, exact=False)
                self.status.setText("compacted")
            else:
                self.status.setText(f"compaction {event.status}: {event.reason}")
        elif isinstance(event, ContextUsage):
            self.gauge.set_window(event.usage.window)
            self.gauge.set_tokens(event.usage.tokens, exact=event.usage.exact)
