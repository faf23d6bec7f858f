"""The message box: several lines, growing with its text up to a limit.

Enter sends; Shift+Enter starts a new line; Up in an empty box brings back the last
message sent; Esc stops the answer being written.
"""

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit

#: The most lines the box grows to before it scrolls.
MAX_LINES = 10


class Composer(QPlainTextEdit):
    """Emits `send_requested(text)`; the window clears it once the daemon has the message."""

    send_requested = Signal(str)
    stop_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("composer")
        self.setPlaceholderText("Message — Enter sends, Shift+Enter for a new line, "
                                "@path attaches a file, Esc stops an answer")
        self.setTabChangesFocus(True)
        self.last_sent = ""
        self.document().contentsChanged.connect(self._fit)
        self._fit()

    def text(self) -> str:
        return self.toPlainText()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt's name
        key, mods = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.AltModifier)):
            text = self.toPlainText()
            if text.strip():
                self.send_requested.emit(text)
            return
        if key == Qt.Key.Key_Escape:
            self.stop_requested.emit()
            return
        if key == Qt.Key.Key_Up and not self.toPlainText() and self.last_sent:
            self.setPlainText(self.last_sent)
            self.moveCursor(self.textCursor().MoveOperation.End)
            return
        super().keyPressEvent(event)

    def _fit(self) -> None:
        """As tall as its text, from one line to MAX_LINES."""
        lines = max(1, min(MAX_LINES, int(self.document().size().height())))
        line = self.fontMetrics().lineSpacing()
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom() + 10
        self.setFixedHeight(lines * line + frame)

    def resizeEvent(self, event) -> None:  # wrapped lines change the height
        super().resizeEvent(event)
        self._fit()
