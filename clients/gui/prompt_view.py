"""What the model sees (Chat ▸ What the model sees…, Ctrl+Shift+P): the open chat's prompt
as it would be sent now, part by part — the system prompt, the goal record, checkpoints,
then each message of the active context (summaries and shortened ones marked) — each with
its tokens, and the total against the window."""

import html
from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QTextBrowser, QVBoxLayout, QWidget

from ...protocol import requests
from ...protocol.replies import PromptReply
from ...protocol.structs import SessionInfo
from . import theme as themes
from .router import Router

#: What each part is called.
KINDS = {"system": "system prompt", "goals": "goal record", "checkpoints": "checkpoints"}


def part_title(part) -> str:
    """`user #12 · summary · ~240 tokens`"""
    who = KINDS.get(part.kind) or f"{part.role} #{part.seq}"
    shown = "" if part.shown == "whole" else f" · {part.shown}"
    return f"{who}{shown} · ~{part.tokens:,} tokens"


class PromptView:
    """Its dialog (made when first opened) and the replies it takes."""

    def __init__(self, parent: QWidget, submit: Callable[[requests.Request], None]) -> None:
        self.parent = parent
        self.submit = submit
        self.dialog: QDialog | None = None
        self.session_id = ""

    def routes(self, router: Router) -> None:
        router.on_reply(PromptReply, lambda _, reply: self.show(reply))

    def open_for(self, session: SessionInfo | None) -> None:
        if session is None:
            return
        if self.dialog is None:
            self.dialog = QDialog(self.parent)
            self.dialog.setWindowTitle("What the model sees")
            self.dialog.resize(760, 560)
            self.total = themes.label("dim", wrap=True)
            self.text = QTextBrowser()
            layout = QVBoxLayout(self.dialog)
            layout.addWidget(self.total)
            layout.addWidget(self.text, 1)
        self.session_id = session.id
        self.submit(requests.Prompt(session=session.id))
        self.dialog.show()

    def show(self, reply: PromptReply) -> None:
        if self.dialog is None or reply.session_id != self.session_id:
            return
        self.total.setText(f"~{reply.tokens:,} of {reply.window:,} tokens before the next message (and the "
                           "recall block a turn adds for it), as the model would get them now:")
        self.text.setHtml("".join(
            f"<p><b>{html.escape(part_title(p))}</b></p><pre style='white-space: pre-wrap'>"
            f"{html.escape(p.text)}</pre>" for p in reply.parts))
