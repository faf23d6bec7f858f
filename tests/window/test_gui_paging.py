"""Long chats in the window: one opens at its last page and pages in older ones; a search hit
deep in it opens a page around the match (issue 41, item 6), not everything from it to the
end; newer pages as the reader scrolls down; live messages wait until the reader is back
at the end."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from ctxkeep.clients.gui.history_pages import PAGE
from window_steps import MODEL, long_session, wait_until


@pytest.mark.early
def test_a_hit_deep_in_a_long_chat_opens_a_page_around_it_and_pages_down(open_window, client):
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"line {i} of the long talk"}
                for i in range(2000)]
    messages[100]["content"] = "an old remark about the zebra crossing near the station"
    far = client.import_session(name="far", model=MODEL, messages=messages).session
    window = open_window(client.create_session(name="first", model=MODEL).session.id)
    wait_until(lambda: window.chat.session is not None and not window.chat.loading)
    asked = []
    original = window.worker.submit

    def counting(request):
        asked.append(request)
        original(request)
    window.chat.submit = window.chat.pages.submit = counting
    window.open_match(far.id, 100, "zebra")
    log = window.chat.log
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == far.id
               and not window.chat.loading)
    assert log.textCursor().selectedText() == "zebra"
    pages = [r for r in asked if type(r).__name__ == "History" and not r.active]
    assert len(pages) == 1 and pages[0].limit == PAGE  # one page, not 1,900 messages
    assert log.has_newer and "line 1999 of" not in log.plain()

    client.send(far.id, "a new question while the reader is at #100")
    wait_until(lambda: client.session(far.id).session.message_count == 2002)
    assert "a new question while" not in log.plain()  # it waits at the end

    for _ in range(60):  # the reader scrolls down, page after page
        if not log.has_newer:
            break
        bar = log.verticalScrollBar()
        bar.setValue(bar.maximum() - 60)  # up a little, then down to the end: one page more
        log.scroll_to_bottom()
        wait_until(lambda: not log.loading_newer)
        assert not log.at_bottom() or not log.has_newer  # the reader stays where the page joined
    assert not log.has_newer and "line 1999 of the long talk" in log.plain()
    assert "a new question while the reader is at #100" in log.plain()


def test_a_long_session_opens_at_its_last_page_and_pages_in_older_ones(open_window, client):
    s = long_session(client, 300)
    window = open_window(s.id)
    log = window.chat.log
    wait_until(lambda: "line 299 of the long talk" in log.plain() and not window.chat.loading)
    assert "line 200 of" not in log.plain() and len(log.entries) <= PAGE + 5  # only the last page
    assert log.at_bottom() and log.has_older
    for _ in range(300 // PAGE + 1):  # the reader scrolls up, page after page
        if not log.has_older:
            break
        shown = len(log.entries)
        log.verticalScrollBar().setValue(0)
        wait_until(lambda: len(log.entries) > shown)
        assert log.verticalScrollBar().value() > 0  # the view stays on what was read
    text = log.plain()
    assert not log.has_older and "line 0 of the long talk" in text
    assert [int(e.text.split()[1]) for e in log.entries] == list(range(300))  # in order, once each


def test_a_search_result_shows_its_match_and_opens_there(open_window, client):
    """Ctrl+K on message text: the row shows an excerpt around the match, wraps instead of
    scrolling sideways, and opening it shows that message (not the end of the chat) with
    the word selected."""
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"line {i} of the long talk"}
                for i in range(200)]
    messages[30]["content"] = "an old remark about the zebra crossing near the station, long ago"
    far = client.import_session(name="a session with a rather long name that will not fit",
                                model=MODEL, messages=messages).session
    first = client.create_session(name="first", model=MODEL).session
    window = open_window(first.id)
    panel = window.panel
    panel.resize(220, 400)
    wait_until(lambda: panel.list.count() == 2)
    QTest.keyClicks(panel.search, "zebra")
    wait_until(lambda: panel.list.count() == 1 and "1 message match" in panel.list.item(0).text())
    row = panel.list.item(0).text()
    assert "“…old remark about the zebra crossing near the station" in row, row
    assert panel.list.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert panel.list.wordWrap()
    panel.list.itemActivated.emit(panel.list.item(0))
    log = window.chat.log
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == far.id
               and not window.chat.loading)
    assert log.textCursor().selectedText() == "zebra"
    assert 0 <= log.cursorRect().top() < log.viewport().height()  # in view, not at the end
    assert not log.at_bottom()
