"""The frame the conversation is read in: a text view whose lines stop at a readable
width however wide the window, that shows the hover text of what is under the pointer (a
message's time, on its name), and that asks for more history at its edges: older when the
reader scrolls to the top, newer when a window of pages in the middle is read to its end."""

from PySide6.QtCore import QEvent, QPoint, Signal
from PySide6.QtWidgets import QTextBrowser, QToolTip

#: The widest the text runs, in pixels; wider windows get margins.
MAX_TEXT_WIDTH = 860
#: How close to the top (or the end), in pixels, the reader must scroll for more history.
NEAR_TOP = 48


class LogView(QTextBrowser):
    """A QTextBrowser with margins past MAX_TEXT_WIDTH, hover texts (`title`), and the
    signals that page history in."""

    older_wanted = Signal()
    newer_wanted = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.has_older, self.loading_older = False, False
        self.has_newer, self.loading_newer = False, False
        self.verticalScrollBar().valueChanged.connect(self._scrolled)

    def at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def scroll_to_bottom(self) -> None:
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def want_more_if_short(self) -> None:
        """Ask for older history while the view is not yet full."""
        if self.has_older and not self.loading_older and self.verticalScrollBar().maximum() == 0:
            self.loading_older = True
            self.older_wanted.emit()

    def _scrolled(self, value: int) -> None:
        if value <= NEAR_TOP and self.has_older and not self.loading_older:
            self.loading_older = True
            self.older_wanted.emit()
        elif value >= self.verticalScrollBar().maximum() - NEAR_TOP and self.has_newer and not self.loading_newer:
            self.loading_newer = True
            self.newer_wanted.emit()

    def tip_at(self, point: QPoint) -> str:
        """The hover text at a point of the view (its rich text's `title`)."""
        return self.cursorForPosition(point).charFormat().toolTip()

    def viewportEvent(self, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.ToolTip:
            tip = self.tip_at(event.pos())  # type: ignore[attr-defined]
            if tip:
                QToolTip.showText(event.globalPos(), tip, self.viewport())  # type: ignore[attr-defined]
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def resizeEvent(self, event) -> None:  # Qt's name (the viewport's resize)
        side = max(0, (self.width() - MAX_TEXT_WIDTH) // 2)
        if self.viewportMargins().left() != side:
            self.setViewportMargins(side, 0, side, 0)
        super().resizeEvent(event)
