"""What a message's links in the log do — ask the last question again, reword a question,
pin or unpin, branch from there, step between an answer's alternatives — and what the
daemon's answers to them change in the log."""

import os
from collections.abc import Callable

from PySide6.QtWidgets import QInputDialog, QWidget

from ...protocol import requests
from ...protocol.replies import HistoryReply, UsageReply
from ...protocol.structs import MessageInfo
from .chatlog import ChatLog
from .entries import Entry, joined


class MessageActions:
    """The open session's message actions; `submit` sends a request, `say` tells the user."""

    def __init__(self, log: ChatLog, submit: Callable[[requests.Request], None],
                 say: Callable[[str], None], parent: QWidget) -> None:
        self.log, self.submit, self.say, self.parent = log, submit, say, parent
        self.session_id = ""
        self.pinned: set[int] = set()

    def opened(self, session_id: str) -> None:
        """A session is shown: which of its messages are pinned is asked for."""
        self.session_id, self.pinned = session_id, set()
        self.submit(requests.Usage(session=session_id))

    def shown(self) -> None:
        """The newest page is in: which answer to the last question the model sees is asked
        for, when it has alternatives."""
        last = self._last_answer()
        if last is not None and len(last.choices) > 1:
            self.submit(requests.History(session=self.session_id, active=True, start=last.reply_to, limit=2))

    def act(self, name: str, seq: int, text: str = "") -> None:
        """Do what the link `act:NAME:SEQ` names (copy is the log's own)."""
        sid = self.session_id
        if name == "retry":
            last = self._last_answer()
            if last is not None and last.seq != seq:
                self.say("Only the last answer can be regenerated: branch from here to ask again")
                return
            self.submit(requests.Regenerate(session=sid))
        elif name == "edit":
            text, ok = QInputDialog.getMultiLineText(self.parent, "Edit your question", "Ask it again as:", text)
            if ok and text.strip():
                self.submit(requests.Edit(session=sid, seq=seq, text=text, cwd=os.getcwd()))
        elif name in ("pin", "unpin"):
            self.submit(requests.Pin(session=sid, seq=seq, pinned=name == "pin"))
        elif name == "branch":
            self.submit(requests.Branch(session=sid, at=seq))
        elif name == "alt":
            self._alternative(seq)
        elif name == "continue":  # the last answer, gone on from where it stopped
            self.submit(requests.Regenerate(session=sid, continues=True))

    def _alternative(self, seq: int) -> None:
        """Another answer to the last question becomes the one the model sees (the daemon's
        reply shows it); an earlier question's is only shown, for reading."""
        entry = self._group_of(seq)
        if entry is None:
            return
        if entry is self._last_answer():
            self.submit(requests.Alternative(session=self.session_id, seq=seq))
            return
        self._show_choice(seq)
        self.say("Shown for reading: only the last question's answers can be switched for the model")

    def done(self, request: requests.Request) -> None:
        """The daemon did a pin, unpin or switch of answers: the log shows it."""
        if isinstance(request, requests.Pin):
            (self.pinned.add if request.pinned else self.pinned.discard)(request.seq)
            self._mark_pins()
        elif isinstance(request, requests.Alternative):
            self._show_choice(request.seq)
            self.say(f"The model sees answer #{request.seq} now")

    def on_usage(self, reply: UsageReply) -> None:
        if reply.session_id == self.session_id:
            self.pinned = set(reply.pinned)
            self._mark_pins()

    def on_seen(self, reply: HistoryReply) -> None:
        """The last exchange the model sees (`shown`'s question): its answer is shown."""
        if reply.session_id == self.session_id and len(reply.messages) == 2:
            self._show_choice(reply.messages[1].seq)

    def answered(self, generation_id: str, message: MessageInfo) -> bool:
        """A new whole answer to a question whose answers are shown joins them as their
        alternative, shown (True), in place of its stream."""
        entry = joined(self.log.entries, Entry("message", message.content, role="assistant", who=message.model,
                                               seq=message.seq, created=message.created,
                                               reply_to=message.reply_to))
        if entry is None:
            return False
        self.log.drop_stream(generation_id)
        self.log.redraw(entry)
        return True

    def _show_choice(self, seq: int) -> None:
        entry = self._group_of(seq)
        if entry is not None and entry.seq != seq:
            entry.choose(seq)
            entry.pinned = seq in self.pinned
            self.log.redraw(entry)

    def _mark_pins(self) -> None:
        for entry in self.log.entries:
            if entry.kind == "message" and entry.seq >= 0 and entry.pinned != (entry.seq in self.pinned):
                entry.pinned = entry.seq in self.pinned
                self.log.redraw(entry)

    def _group_of(self, seq: int) -> Entry | None:
        return next((e for e in self.log.entries if e.seq == seq or any(c.seq == seq for c in e.choices)), None)

    def _last_answer(self) -> Entry | None:
        return next((e for e in reversed(self.log.entries) if e.role == "assistant" and e.seq >= 0), None)
