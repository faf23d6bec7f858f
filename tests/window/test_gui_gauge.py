"""The context gauge alone, drawn offscreen: its colour at each threshold, the ring from twelve
o'clock counter-clockwise, its centre text and tooltip, a click that asks for compaction."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest

from ctxkeep.clients.gui.gauge import AMBER, GREEN, RED, TRACK, ContextGauge, compact_count


def pixel(gauge: ContextGauge, x: int, y: int) -> QColor:
    return gauge.grab().toImage().pixelColor(x, y)


def close(a: QColor, hex_colour: str) -> bool:
    b = QColor(hex_colour)
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) < 40


@pytest.mark.parametrize("tokens, colour", [(0, GREEN), (599, GREEN), (600, AMBER), (850, AMBER),
                                            (851, RED), (1000, RED), (5000, RED)])
def test_gauge_colour_at_each_threshold(app, tokens, colour):
    gauge = ContextGauge(1000)
    gauge.set_tokens(tokens)
    assert gauge.colour() == colour


def test_gauge_draws_counter_clockwise_from_twelve(app):
    gauge = ContextGauge(1000)
    gauge.resize(100, 100)
    gauge.setFixedSize(100, 100)
    gauge.set_tokens(500)  # half: from 12 o'clock over 9 to 6, on the left
    ring = 5 + 5  # pen width 10 at side 100, centred on the rect's edge at 10
    assert close(pixel(gauge, ring, 50), GREEN), pixel(gauge, ring, 50).name()  # 9 o'clock
    assert close(pixel(gauge, 100 - ring, 50), TRACK)  # 3 o'clock: not reached
    gauge.set_tokens(700)
    assert close(pixel(gauge, ring, 50), AMBER)
    assert close(pixel(gauge, 100 - ring, 50), TRACK)
    gauge.set_tokens(900)
    assert close(pixel(gauge, 100 - ring, 50), RED)  # past 6 o'clock, round to 3


def test_gauge_centre_text_and_tooltip(app):
    gauge = ContextGauge(128_000)
    gauge.set_tokens(47_200)
    assert gauge.centre_text() == "47K"
    assert gauge.toolTip() == "47,200 / 128,000 tokens — click to compact"
    gauge.set_tokens(14_200, exact=False)
    assert gauge.centre_text() == "~14K" and gauge.toolTip().startswith("~14,200 / 128,000")
    assert [compact_count(n) for n in (950, 4_700, 47_200, 1_250_000)] == ["950", "4.7K", "47K", "1.2M"]


def test_gauge_click_requests_compaction_unless_compacting(app):
    gauge = ContextGauge(1000)
    clicks = []
    gauge.compact_requested.connect(lambda: clicks.append(1))
    QTest.mouseClick(gauge, Qt.MouseButton.LeftButton, pos=QPoint(20, 20))
    assert clicks == [1]
    gauge.set_compacting(True)
    QTest.mouseClick(gauge, Qt.MouseButton.LeftButton, pos=QPoint(20, 20))
    assert clicks == [1] and "compacting" in gauge.toolTip()
