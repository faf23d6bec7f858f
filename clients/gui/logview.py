"""The frame the conversation is read in: a text view whose lines stop at a readable
width however wide the window, and that shows the hover text of what is under the
pointer (a message's time, on its name)."""

from PySide6.QtCore import QEvent, QPoint
from PySide6.QtWidgets import QTextBrowser, QToolTip

#: The widest the text runs, in pixels; wider windows get margins.
MAX_TEXT_WIDTH = 860


class LogView(QTextBrowser):
    """A QTextBrowser with margins past MAX_TEXT_WIDTH and hover texts (`title`)."""

    def tip_at(self, point: QPoint) -> str:
        """The hover text at a point of the view (its rich text's `title`)."""
        return self.cursorForPosition(point).charFormat().toolTip()

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ToolTip:
            tip = self.tip_at(event.pos())  # type: ignore[attr-defined]
            if tip:
                QToolTip.showText(event.globalPos(), tip, self.viewport())  # type: ignore[attr-defined]
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name (the viewport's resize)
        side = max(0, (self.width() - MAX_TEXT_WIDTH) // 2)
        if self.viewportMargins().left() != side:
            self.setViewportMargins(side, 0, side, 0)
        super().resizeEvent(event)
