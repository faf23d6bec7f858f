"""The open session: its header (name, model picker, gauge, token count), the log, and the
message box. History comes in pages, newest first: the last page when the session opens,
older ones as the reader scrolls up; live events are held until the first page is shown,
then applied by `LiveEvents` (live_events.py)."""

import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...protocol import requests
from ...protocol.replies import HistoryReply, ImageReply, UsageReply
from ...protocol.structs import ModelInfo, SessionInfo
from ..present import chat_models
from . import theme as themes
from .chatlog import ChatLog
from .composer import Composer
from .dialogs import fill_models
from .gauge import ContextGauge, usage_text
from .history_pages import HistoryPages
from .live_events import LiveEvents
from .message_actions import MessageActions
from .router import Router
from .theme import Theme


class ChatView(QWidget):
    """Sends requests through `submit`; the window routes this session's replies and
    events to it."""

    #: The first page of the session is shown (for --screenshot and the benches).
    shown = Signal()
    status = Signal(str)
    #: A message of another chat is wanted (a link in a recall line): its session and seq.
    open_message = Signal(str, int)

    def __init__(self, submit, theme: Theme) -> None:
        super().__init__()
        self.submit = submit
        self.session: SessionInfo | None = None
        self.loading = False
        self.held: list[object] = []
        self._models: list[ModelInfo] = []
        self.title = themes.label("title")
        self.model = QComboBox()
        self.model.setToolTip("The model of this session (its next answer uses it)")
        self.model.setMinimumContentsLength(12)
        self.model.activated.connect(self._model_chosen)
        self.gauge = ContextGauge(8192)
        self.usage = themes.label("usage")
        self.gauge.compact_requested.connect(self.compact)
        self.log = ChatLog(theme)
        self.log.action.connect(self.act)
        self.log.image_wanted.connect(lambda digest: submit(requests.ImageGet(hash=digest)))
        self.message_actions = MessageActions(self.log, submit, self.status.emit, self)
        self.pages = HistoryPages(submit, self.log, self.message_actions)
        self.log.older_wanted.connect(lambda: self.pages.load_older())
        self.log.newer_wanted.connect(lambda: self.pages.load_newer())
        self.log.open_message.connect(self.open_message)
        self.live = LiveEvents(self.log, self.pages, self.message_actions, self.gauge, self.status.emit, self._set_busy,
                               self._usage_changed, lambda: self.session.model if self.session else "")
        self.composer = Composer()
        self.composer.send_requested.connect(self.send)
        self.composer.stop_requested.connect(self.stop)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(lambda: self.send(self.composer.text()))
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stop")
        self.stop_button.setToolTip("Stop the answer being written, or the compaction running (Esc)")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.hide()
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(self.model)
        header.addWidget(self.usage)
        header.addWidget(self.gauge)
        entry = QHBoxLayout()
        entry.addWidget(self.composer, 1)
        entry.addWidget(self.send_button)
        entry.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 8, 8, 8)
        layout.addLayout(header)
        layout.addWidget(self.log, 1)
        layout.addLayout(entry)

    # -- the session ----------------------------------------------------------------------

    def open(self, session: SessionInfo, at: int = -1, find: str = "") -> None:
        """Show `session` from its last page, or (`at`) from just before that message to
        the end, scrolled to it with `find`'s words selected."""
        self.show_info(session)
        self.loading, self.held = True, []
        self.live.reset()
        self.log.reset()
        self._set_busy(session.busy)
        self.pages.start(session, at, find)
        self.message_actions.opened(session.id)

    def show_info(self, session: SessionInfo) -> None:
        self.session = session
        self.title.setText(f"<b>{session.name}</b>")
        self.gauge.set_window(session.window or session.num_ctx)
        self.gauge.set_tokens(session.next_tokens or session.token_count, session.token_count_exact)
        self._usage_changed()
        if self.model.currentData() != session.model:
            self.set_models(self._models, session.model)

    def set_models(self, models: list[ModelInfo], selected: str = "") -> None:
        self._models = chat_models(models)
        fill_models(self.model, self._models, selected or (self.session.model if self.session else ""))

    def on_history(self, request: requests.History, reply: HistoryReply) -> None:
        if self.session is None or reply.session_id != self.session.id:
            return
        if request.active:  # which answer to the last question the model sees
            self.message_actions.on_seen(reply)
            return
        if self.pages.on_page(request, reply):  # the newest pages are in: live events follow
            self.loading = False
            for event in self.held:
                self.on_event(event)
            self.held = []
            self.log.want_more_if_short()
            self.message_actions.shown()
            self.shown.emit()

    def routes(self, router: Router) -> None:
        """The replies and failures the chat view takes."""
        router.on_reply(HistoryReply, self.on_history)
        router.on_reply(UsageReply, lambda _, reply: self.message_actions.on_usage(reply))
        router.on_reply(ImageReply, lambda _, reply: self.log.add_thumbnail(reply.hash, reply.data))
        router.on_failure(requests.Send, lambda _, message: self.sent(False, message))

        def history_failed(_: requests.Request, message: str) -> None:
            self.pages.failed()
            self.status.emit(f"Could not load the history: {message}")
        router.on_failure(requests.History, history_failed)

    def done(self, request: requests.Request) -> None:
        """A request about a message was answered (a pin, an answer switched)."""
        self.message_actions.done(request)

    # -- what the user does ---------------------------------------------------------------

    def send(self, text: str) -> None:
        if self.session is None or not text.strip() or self.composer.isReadOnly():
            return
        self.composer.setReadOnly(True)  # until the daemon has it (or says why not)
        if not self.pages.newest:  # reading around an older message: back to the end first
            self.open(self.session)
        self.submit(requests.Send(session=self.session.id, text=text, cwd=_cwd()))

    def sent(self, ok: bool, text: str = "", request: requests.Send | None = None) -> None:
        """The daemon's answer to a send: the box is emptied only once it has the message
        (a send of the box's: it is read-only until then; a message action's leaves it be)."""
        if not self.composer.isReadOnly():
            if text:
                self.status.emit(f"Not sent: {text}")
            return
        self.composer.setReadOnly(False)
        if ok:
            self.composer.last_sent = self.composer.text()
            self.composer.clear()
        elif text:
            self.status.emit(f"Not sent — your message is still in the box. {text}")

    def stop(self) -> None:
        if self.session is not None and (self.streaming or self.session.busy):
            self.submit(requests.Cancel(session=self.session.id))
            self.status.emit("stopping…")

    def compact(self) -> None:
        if self.session is not None:
            self.submit(requests.Compact(session=self.session.id, requested_by="gui"))

    def act(self, name: str, seq: int) -> None:
        """A message's action (its link in the log)."""
        if self.session is not None:
            entry = next((e for e in self.log.entries if e.seq == seq), None)
            self.message_actions.act(name, seq, entry.text if entry else "")

    def _model_chosen(self, index: int) -> None:
        name = self.model.itemData(index)
        if self.session is not None and name and name != self.session.model:
            self.submit(requests.SetModel(session=self.session.id, model=name))

    # -- events of the open session ---------------------------------------------------------

    @property
    def streaming(self) -> set[str]:
        """The answers being written now."""
        return self.live.streaming

    def on_event(self, event: object) -> None:
        if self.loading:  # live events follow the first page
            self.held.append(event)
        else:
            self.live.on_event(event)

    def _set_busy(self, busy: bool) -> None:
        self.stop_button.setVisible(busy)

    def _usage_changed(self) -> None:
        rate = self.session.cache_hit_rate if self.session is not None else None
        self.usage.setText(usage_text(self.gauge.tokens, self.gauge.num_ctx, self.gauge.exact)
                           + (f" · {rate:.0%} cached" if rate is not None else ""))
        self.usage.setToolTip("" if rate is None else f"{rate:.0%} of this chat's prompt tokens came from the "
                              "model server's cache: a turn reads only the rest")


def _cwd() -> str:
    return os.getcwd()
