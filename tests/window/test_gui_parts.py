"""The window's chat log alone (pytest-qt, offscreen): streaming into it, the reader's view
and selection, older pages, and how a history page becomes log entries."""

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QTextCursor
from PySide6.QtWidgets import QApplication

from ctxkeep.clients.gui.chatlog import ChatLog
from ctxkeep.clients.gui.entries import Entry, actions_html, entries_of
from ctxkeep.protocol.structs import AttachedFile, CompactionMark, MessageInfo


def message(seq, role="user", text="", **kw):
    return MessageInfo(seq=seq, role=role, content=text or f"message {seq}", created=0.0, **kw)


@pytest.fixture
def log(qtbot):
    made = ChatLog()
    qtbot.addWidget(made)
    made.resize(700, 400)
    made.show()
    for i in range(30):
        made.add_entry(Entry("message", f"message number {i}\n\nwith a second paragraph",
                          role="user" if i % 2 == 0 else "assistant"))
    return made


def test_streamed_pieces_grow_one_frame_and_leave_the_rest_alone(log):
    before = log.document().toHtml()
    log.stream("g1", "Hel")
    log.stream("g1", "lo")
    log.add_entry(Entry("message", "a question queued meanwhile", role="user"))
    log.stream("g1", " there")
    text = log.plain()
    assert text.index("Hello there") < text.index("a question queued meanwhile")
    assert log.document().toHtml().startswith(before[:len(before) // 2])  # older frames untouched
    log.end_stream("g1", "Hello **there**\n\n```python\nprint(1)\n```", who="qwen2.5:7b")
    text = log.plain()
    assert "Hello there" in text and "**" not in text and "print(1)" in text  # Markdown now
    assert text.index("print(1)") < text.index("a question queued meanwhile")
    assert len(log.entries) == 32 and log.entries[30].who == "qwen2.5:7b"


def test_the_readers_selection_survives_streaming(log):
    cursor = log.textCursor()
    start = log.plain().index("message number 3")
    cursor.setPosition(start)
    cursor.setPosition(start + len("message number 3"), QTextCursor.MoveMode.KeepAnchor)
    log.setTextCursor(cursor)
    for piece in ["streaming ", "text ", "arrives"] * 20:
        log.stream("g", piece)
    assert log.textCursor().selectedText() == "message number 3"


def test_the_view_follows_the_bottom_only_while_it_is_there(log):
    assert log.verticalScrollBar().maximum() > 0
    log.scroll_to_bottom()
    log.stream("g", "a piece\n" * 5)
    assert log.at_bottom()  # at the bottom: it follows
    log.verticalScrollBar().setValue(100)
    log.stream("g", "more\n" * 20)
    log.add_entry(Entry("message", "another", role="user"))
    assert log.verticalScrollBar().value() == 100  # scrolled up to read: it stays


def test_older_history_goes_above_without_moving_the_view(log, qtbot):
    log.has_older = True
    log.scroll_to_bottom()
    bar = log.verticalScrollBar()
    bar.setValue(200)
    anchor = log.cursorForPosition(QPoint(10, 10)).position() - log.document().characterCount()
    with qtbot.waitSignal(log.older_wanted, timeout=2000):
        bar.setValue(0)  # the reader reaches the top
    assert log.loading_older
    log.prepend([Entry("message", f"older {i}", role="user") for i in range(10)], has_older=False)
    assert log.plain().index("older 9") < log.plain().index("message number 0")
    assert bar.value() > 0  # the same text stays in view, not the new top
    assert not log.has_older and not log.loading_older
    after = log.cursorForPosition(QPoint(10, 10)).position() - log.document().characterCount()
    assert abs(after - anchor) < 400  # near the text that was on top before (counted from the end)


def test_copy_link_puts_the_code_on_the_clipboard(log, qtbot):
    log.add_entry(Entry("message", "Try:\n\n```sh\nls -la | wc -l\n```", role="assistant"))
    copied = []
    log.copied.connect(copied.append)
    log.scroll_to_bottom()
    found = log.document().find("Copy", log.document().characterCount() - 200)
    found.setPosition(found.selectionStart() + 1)
    qtbot.mouseClick(log.viewport(), Qt.MouseButton.LeftButton, pos=log.cursorRect(found).center())
    assert QGuiApplication.clipboard().text() == "ls -la | wc -l" and copied == ["ls -la | wc -l"]


def test_text_stays_readable_on_a_wide_window(log):
    log.resize(1600, 500)
    QApplication.processEvents()
    assert log.viewport().width() <= 880


def test_a_reopened_history_shows_each_compaction_where_it_happened():
    marker = "── compacted: 9,000 → ~2,000 tokens (7,000 freed) ──"
    pruned = "── compacted (older messages set aside): 5,000 → ~4,000 tokens (1,000 freed) ──"
    page = [message(0), message(1, "assistant", model="m"), message(2, "assistant", "the summary", kind="summary"),
            message(3, files=[AttachedFile(path="notes.md", mode="full")]),
            message(4, "assistant", "cut", status="interrupted", error="ollama_unreachable")]
    entries = entries_of(page, [CompactionMark(at=2, marker=marker), CompactionMark(at=5, marker=pruned)])
    kinds = [(e.kind, e.text) for e in entries]
    assert kinds == [("message", "message 0"), ("message", "message 1"), ("marker", marker),
                     ("message", "message 3"), ("message", "cut"), ("marker", pruned)]
    assert entries[3].note == "attached notes.md" and "Ollama is not running" in entries[4].note


def test_a_streamed_answer_the_history_already_shows_is_taken_away(log):
    before = log.plain()
    log.stream("g", "an answer already in the page")
    log.add_entry(Entry("message", "next question", role="user"))
    log.drop_stream("g")
    assert log.plain() == before + "\nYou\nnext question "
    assert len(log.entries) == 31 and log.entries[-1].text == "next question"
    log.stream("h", "a new one")  # positions still right after the removal
    assert log.plain().endswith("next question \nModel  writing…\na new one")


def test_two_answers_streaming_alike_each_grow_their_own(log):
    log.stream("a", "same words")
    log.stream("b", "same words")  # alike, yet another entry
    log.stream("b", " and more")
    log.end_stream("a", "same words", who="first")
    text = log.plain()
    assert text.index("first\nsame words") < text.index("same words and more")
    assert [e.text for e in log.entries[-2:]] == ["same words", "same words and more"]


def test_a_recall_line_above_an_answer_opens_to_what_was_recalled(log):
    """The small line recall leaves above an answer: closed, it says how many earlier
    messages were recalled; a click on it shows which (and again hides them). A reopened
    session's history shows the same line from the answer's `recalled`."""
    from PySide6.QtCore import QUrl

    from ctxkeep.clients.gui.entries import recall_entry
    log.add_entry(Entry("message", "Where does Alice live?", role="user"))
    line = recall_entry(2, "#4 user: my sister Alice moved to Lisbon\n#5 assistant: Noted!")
    log.add_entry(line)
    log.add_entry(Entry("message", "In Lisbon.", role="assistant"))
    assert "recalled 2 earlier messages into this question's prompt" in log.plain()
    assert "moved to Lisbon" not in log.plain()
    log._link(QUrl(f"recall:{id(line)}"))
    assert "#4 user: my sister Alice moved to Lisbon" in log.plain() and "In Lisbon." in log.plain()
    log._link(QUrl(f"recall:{id(line)}"))
    assert "moved to Lisbon" not in log.plain() and "In Lisbon." in log.plain()
    page = entries_of([message(6, "user", "q"), message(7, "assistant", "a", recalled=[1, 2])], [])
    assert [e.kind for e in page] == ["message", "recall", "message"] and page[1].details == "#1 #2"


def test_the_whole_answers_to_a_question_are_one_entry_with_arrows_between_them():
    page = [message(0, "user", "q"), message(1, "assistant", "first", reply_to=0),
            message(2, "assistant", "cut", reply_to=0, status="interrupted", error="cancelled"),
            message(3, "assistant", "second", reply_to=0, alternative_of=1),
            message(4, "user", "q reworded", alternative_of=0), message(5, "assistant", "third", reply_to=4)]
    entries = entries_of(page, [], pinned={4})
    assert [(e.role, e.text, e.note) for e in entries] == [
        ("user", "q", ""), ("assistant", "second", ""), ("assistant", "cut", "stopped"),
        ("user", "q reworded", "reworded #0"), ("assistant", "third", "")]
    answers = entries[1]
    assert [c.seq for c in answers.choices] == [1, 3] and answers.seq == 3  # the newest shown
    html = actions_html(answers, "#888")
    assert 'href="act:alt:1"' in html and "2/2" in html and 'href="act:alt:3"' not in html
    answers.choose(1)
    assert (answers.text, answers.seq) == ("first", 1) and 'href="act:alt:3"' in actions_html(answers, "#888")
    assert 'act:unpin:4' in actions_html(entries[3], "#888") and 'act:pin:0' in actions_html(entries[0], "#888")


def test_tool_exchanges_are_collapsed_and_images_drawn_as_thumbnails_once_fetched(log, qtbot):
    """A tool call and its result are one line each, opened by a click; a message's images
    show as `[image]` until their bytes are asked for (once) and come, then as thumbnails."""
    import base64

    from PySide6.QtCore import QUrl

    from ctxkeep.protocol.images import ImageRef
    from ctxkeep.protocol.tools import FunctionCall, ToolCall, ToolResult
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    ref = ImageRef(hash="c414cd0e204de974f73753c7e28d7638e7b3691bb8b1a2bab6b25bb7fed7ce77",
                   media_type="image/png", size=len(base64.b64decode(png)), name="dot.png")
    call = ToolCall(function=FunctionCall(name="run", arguments={"cmd": "pytest"}))
    out = "collected 3 items\n" * 20 + "1 failed, 2 passed"
    page = entries_of([message(1, "user", "test it", images=[ref]),
                       message(2, "assistant", " ", tool_calls=[call]),
                       message(3, "tool", out, tool_results=[ToolResult(tool_name="run", content=out)])], [])
    assert [(e.kind, e.text) for e in page[1:]] == [("fold", "called run"), ("fold", "run returned 21 lines")]
    assert page[0].note == "attached dot.png"
    log.reset()
    with qtbot.waitSignal(log.image_wanted) as wanted:
        for entry in page:
            log.add_entry(entry)
    assert wanted.args == [ref.hash] and "[image]" in log.plain()
    assert "1 failed, 2 passed" not in log.plain() and "called run" in log.plain()
    log._link(QUrl(f"recall:{id(page[2])}"))
    assert "1 failed, 2 passed" in log.plain()
    log.add_thumbnail(ref.hash, png)
    assert "[image]" not in log.plain() and f"ctximg:{ref.hash}" in log.document().toHtml()


def test_an_answer_cut_at_its_limit_or_off_its_format_says_so_beside_its_name():
    cut = entries_of([message(0, "user", "hi"), message(1, "assistant", "a long one", done_reason="length")], [])
    assert cut[-1].note == "cut at its length limit: continue asks it to go on"
    assert "act:continue:1" in actions_html(cut[-1], "#888")  # the action that does it
    off = entries_of([message(0, "user", "json please"), message(1, "assistant", "nope", format_error="not JSON: x")], [])
    assert off[-1].note == "not in the format asked: not JSON: x"
