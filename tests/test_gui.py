"""ctxkeep-gui offscreen, against the real daemon and the stand-in."""

import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from conftest import wait_terminal  # noqa: E402
from ctxkeep.clients.gui.gauge import AMBER, GREEN, RED, TRACK, ContextGauge, compact_count  # noqa: E402
from ctxkeep.clients.gui.window import MainWindow, format_text  # noqa: E402
from ctxkeep.clients.gui.worker import DaemonWorker  # noqa: E402
from ctxkeep.protocol.events import CompactionRequest, CompactionResult  # noqa: E402

MODEL = "qwen2.5:7b"


@pytest.fixture(scope="module")
def app():
    return QApplication.instance() or QApplication([])


def wait_until(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        QApplication.processEvents()
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def pixel(gauge: ContextGauge, x: int, y: int) -> QColor:
    return gauge.grab().toImage().pixelColor(x, y)


def close(a: QColor, hex_colour: str) -> bool:
    b = QColor(hex_colour)
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) < 40


# -- the gauge alone ---------------------------------------------------------------------


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


def test_code_blocks_are_formatted():
    out = format_text("Look:\n```python\nx = 1 < 2\n```\nand `y`.")
    assert '<pre style="background:#2b3035;' in out and "x = 1 &lt; 2" in out
    assert '<code style="background:#2b3035;">y</code>' in out


# -- the window on a daemon ------------------------------------------------------------------


@pytest.fixture
def open_window(app, daemon):
    made = []

    def make(session=""):
        worker = DaemonWorker(daemon.control, daemon.events)
        window = MainWindow(worker, session)
        worker.start()
        window.show()
        made.append((worker, window))
        return window
    yield make
    for worker, window in made:
        window.close()
        worker.stop()


def converse(client, sid, n):
    for i in range(n):
        acc = client.send(sid, f"question {i} about the plan")
        wait_terminal(client, acc.generation_id)


def test_click_compacts_and_the_log_gets_the_marker(open_window, daemon, standin, client):
    s = client.create_session(model=MODEL).session
    converse(client, s.id, 6)
    window = open_window(s.id)
    wait_until(lambda: window.session is not None and window.gauge.tokens > 0)
    assert window.gauge.tokens == client.session(s.id).session.token_count
    standin.script("Six questions about the plan.")
    QTest.mouseClick(window.gauge, Qt.MouseButton.LeftButton, pos=QPoint(20, 20))
    request = None
    while request is None:
        item = client.next_event(timeout=10)
        assert item is not None
        if isinstance(item[1], CompactionRequest):
            request = item[1]
    assert request.requested_by == "gui"
    result = None
    while result is None:
        item = client.next_event(timeout=10)
        if isinstance(item[1], CompactionResult):
            result = item[1]
    wait_until(lambda: result.marker in window.log.plain())
    wait_until(lambda: not window.gauge.compacting)
    assert (window.gauge.tokens, window.gauge.exact) == (result.tokens_after, False)
    assert window.gauge.centre_text().startswith("~")
    # the next turn snaps the gauge to the exact count
    acc = client.send(s.id, "next")
    end, _ = wait_terminal(client, acc.generation_id)
    wait_until(lambda: window.gauge.exact and window.gauge.tokens == end.token_count)


def test_a_turn_from_the_cli_updates_the_gui(open_window, daemon, standin):
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    window = open_window(sid)
    wait_until(lambda: window.session is not None and window.session.id == sid)
    standin.script("An answer from the CLI turn.")
    assert daemon.cli("ask", sid, "asked from the terminal").returncode == 0
    exact = standin.chats[-1].prompt_tokens
    wait_until(lambda: window.gauge.tokens == exact and window.gauge.exact)
    wait_until(lambda: "An answer from the CLI turn." in window.log.plain())
    assert "asked from the terminal" in window.log.plain()
    assert window.gauge.toolTip() == f"{exact:,} / 8,192 tokens — click to compact"


def test_two_windows_stay_in_step(open_window, daemon, standin, client):
    s = client.create_session(model=MODEL).session
    a, b = open_window(s.id), open_window(s.id)
    wait_until(lambda: a.session is not None and b.session is not None)
    standin.chunk_delay = 0.01
    standin.script("streamed to both windows alike")
    a.input.setText("hello from window a")
    QTest.keyClick(a.input, Qt.Key.Key_Return)
    wait_until(lambda: "streamed to both windows alike" in b.log.plain()
               and "streamed to both windows alike" in a.log.plain())
    assert "hello from window a" in b.log.plain()
    wait_until(lambda: a.gauge.tokens == b.gauge.tokens > 0)


def test_banner_without_daemon_then_reconnects(app, daemon_factory, standin):
    d = daemon_factory()
    worker = DaemonWorker(d.control, d.events)
    window = MainWindow(worker)
    worker.start()
    window.show()
    try:
        wait_until(lambda: window.banner.isVisible())
        assert "ctxkeepd is not running" in window.banner.text()
        assert "ctxkeep daemon run" in window.banner.text()
        d.start()
        with d.client() as c:
            c.create_session(name="appears")
        wait_until(lambda: not window.banner.isVisible(), timeout=20)
        wait_until(lambda: window.session is not None and window.session.name == "appears")
    finally:
        window.close()
        worker.stop()


def test_window_renders_to_png(open_window, daemon, standin, client, tmp_path):
    s = client.create_session(model=MODEL).session
    converse(client, s.id, 2)
    window = open_window(s.id)
    wait_until(lambda: "question 1 about the plan" in window.log.plain())
    path = tmp_path / "window.png"
    assert window.grab().save(str(path))
    image = window.grab().toImage()
    assert path.stat().st_size > 5000 and image.width() >= 800
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 37)
               for y in range(0, image.height(), 29)}
    assert len(colours) > 5  # a drawn window, not a blank one
