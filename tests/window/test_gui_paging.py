"""Opening a search hit deep in a long chat (issue 41, item 6): a page around the match, not
everything from it to the end; newer pages as the reader scrolls down; live messages wait
until the reader is back at the end."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from ctxkeep.clients.gui.history_pages import PAGE  # noqa: E402
from test_gui import MODEL, app, open_window, wait_until  # noqa: E402,F401  (fixtures)


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
