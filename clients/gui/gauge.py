"""ContextGauge: how full the context window is, as an arc.

The arc starts at 12 o'clock and sweeps counter-clockwise, span = fill x 360
x 16 (Qt counts 1/16ths of a degree). Green below 60 %, amber to 85 %, red
above; the centre shows the count compactly (47K), in a font small enough to fit the
ring; the tooltip reads
`47,200 / 128,000 tokens — click to compact`; a click asks for a compaction.
While a compaction runs the gauge says so and ignores clicks. An estimate
(after a compaction, until the next turn) is drawn dashed and marked `~`.
"""

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

GREEN = "#7ec8a4"
AMBER = "#c8a47e"
RED = "#c87e7e"
TRACK = "#3a3f44"


def colour_for(fill: float) -> str:
    """The arc's colour at a fill (0..1): green, then amber, then red as it fills."""
    if fill < 0.60:
        return GREEN
    if fill <= 0.85:
        return AMBER
    return RED


def compact_count(count: int) -> str:
    """47200 -> 47K, 4700 -> 4.7K, 950 -> 950, 1250000 -> 1.2M. Rounded down, so that a
    count short of the window never reads as the window (1,982 of 2,048 is 1.9K, not 2K)."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count // 100 / 10:.1f}K".replace(".0K", "K")
    if count < 1_000_000:
        return f"{count // 1000}K"
    return f"{count // 100_000 / 10:.1f}M".replace(".0M", "M")


def usage_text(tokens: int, window: int, exact: bool = True) -> str:
    """`~1,982 / 2,048 tokens · 96 %` (the percentage rounded down, like the count)."""
    percent = int(100 * tokens / window) if window else 0
    return f"{'' if exact else '~'}{tokens:,} / {window:,} tokens · {percent} %"


class ContextGauge(QWidget):
    """An arc gauge of tokens / window; click to compact."""

    compact_requested = Signal()

    def __init__(self, num_ctx: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.num_ctx = num_ctx
        self.tokens = 0
        self.exact = True
        self.compacting = False
        self.track, self.text_colour = TRACK, "#d0d4d8"
        self.setFixedSize(56, 56)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self._update_tooltip()

    @property
    def fill(self) -> float:
        return min(1.0, self.tokens / self.num_ctx) if self.num_ctx else 0.0

    def colour(self) -> str:
        return colour_for(self.fill)

    def centre_text(self) -> str:
        return ("~" if not self.exact else "") + compact_count(self.tokens)

    def set_tokens(self, count: int, exact: bool = True) -> None:
        """Called on every response.generation (exact) or compaction result (estimate)."""
        self.tokens = max(0, count)
        self.exact = exact
        self._update_tooltip()
        self.update()

    def set_window(self, num_ctx: int) -> None:
        self.num_ctx = num_ctx
        self._update_tooltip()
        self.update()

    def set_compacting(self, running: bool) -> None:
        self.compacting = running
        self.setCursor(Qt.CursorShape.BusyCursor if running else Qt.CursorShape.PointingHandCursor)
        self._update_tooltip()
        self.update()

    def _update_tooltip(self) -> None:
        tilde = "" if self.exact else "~"
        text = f"{tilde}{self.tokens:,} / {self.num_ctx:,} tokens"
        self.setToolTip(f"{text} — compacting…" if self.compacting else f"{text} — click to compact")

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        side = min(self.width(), self.height())
        width = max(4.0, side / 10)
        rect = QRectF((self.width() - side) / 2 + width, (self.height() - side) / 2 + width,
                      side - 2 * width, side - 2 * width)
        painter.setPen(QPen(QColor(self.track), width, Qt.PenStyle.SolidLine, Qt.PenCapStyle.FlatCap))
        painter.drawArc(rect, 0, 360 * 16)
        style = Qt.PenStyle.SolidLine if self.exact else Qt.PenStyle.DashLine
        pen = QPen(QColor(self.colour()), width, style, Qt.PenCapStyle.FlatCap)
        painter.setPen(pen)
        painter.drawArc(rect, 90 * 16, int(self.fill * 360 * 16))  # from 12 o'clock, counter-clockwise
        text = "…" if self.compacting else self.centre_text()
        painter.setFont(self.label_font(text, rect.width() - width))
        painter.setPen(QColor(self.text_colour))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.end()

    def label_font(self, text: str, room: float) -> QFont:
        """The largest bold font (up to a quarter of the ring) in which `text` fits `room`."""
        font = QFont(self.font())
        font.setBold(True)
        size = max(7, int(min(self.width(), self.height()) / 4))
        while size > 7:
            font.setPixelSize(size)
            if QFontMetricsF(font).horizontalAdvance(text) <= room:
                break
            size -= 1
        font.setPixelSize(size)
        return font

    def set_theme(self, track: str, text: str) -> None:
        self.track, self.text_colour = track, text
        self.update()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # Qt's name
        if event.button() == Qt.MouseButton.LeftButton and not self.compacting:
            self.compact_requested.emit()
