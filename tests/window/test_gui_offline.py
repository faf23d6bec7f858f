"""The window while ctxkeepd is not running: a banner that says how to start it, a reconnect
once it runs, a message typed meanwhile kept in the box."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from ctxkeep.protocol.structs import SessionInfo
from window_steps import MODEL, wait_until


def test_banner_without_daemon_then_reconnects(window_without_daemon, standin):
    window, d = window_without_daemon
    wait_until(lambda: window.banner.isVisible())
    assert "ctxkeepd is not running" in window.banner.text()
    assert "ctxkeep daemon run" in window.banner.text()
    d.start()
    with d.client() as c:
        c.create_session(name="appears")
    wait_until(lambda: not window.banner.isVisible(), timeout=20)
    wait_until(lambda: window.chat.session is not None and window.chat.session.name == "appears")


def test_a_message_typed_while_the_daemon_is_away_stays_in_the_box(window_without_daemon):
    window, _ = window_without_daemon
    wait_until(lambda: window.banner.isVisible())
    window.chat.session = SessionInfo(id="x", name="x", model=MODEL, num_ctx=8192, created=0, updated=0)
    QTest.keyClicks(window.chat.composer, "do not lose me")
    QTest.keyClick(window.chat.composer, Qt.Key.Key_Return)
    wait_until(lambda: "Not sent" in window.statusBar().currentMessage())
    assert window.chat.composer.text() == "do not lose me" and not window.chat.composer.isReadOnly()
