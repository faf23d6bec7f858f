"""ctxkeep-gui offscreen, against the real daemon and the stand-in."""

import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox

from conftest import wait_terminal
from ctxkeep.clients.gui.dialogs import NewSessionDialog
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import CompactionRequest, CompactionResult
from window_steps import long_session, wait_until

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


MODEL = "qwen2.5:7b"


def converse(client, sid, n):
    for i in range(n):
        acc = client.send(sid, f"question {i} about the plan")
        wait_terminal(client, acc.generation_id)


def test_click_compacts_and_the_log_gets_the_marker(open_window, daemon, standin, client):
    s = client.create_session(model=MODEL).session
    converse(client, s.id, 6)
    window = open_window(s.id)
    wait_until(lambda: window.chat.session is not None and window.chat.gauge.tokens > 0)
    assert window.chat.gauge.tokens == client.session(s.id).session.next_tokens
    standin.script("Six questions about the plan.")
    QTest.mouseClick(window.chat.gauge, Qt.MouseButton.LeftButton, pos=QPoint(20, 20))
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
    wait_until(lambda: result.marker in window.chat.log.plain())
    wait_until(lambda: not window.chat.gauge.compacting)
    assert (window.chat.gauge.tokens, window.chat.gauge.exact) == (result.tokens_after, False)
    assert window.chat.gauge.centre_text().startswith("~")
    # the next turn snaps the gauge to the exact count
    acc = client.send(s.id, "next")
    end, _ = wait_terminal(client, acc.generation_id)
    wait_until(lambda: window.chat.gauge.exact and window.chat.gauge.tokens == end.next_tokens)


def client_session_next(daemon, sid: str) -> int:
    with daemon.client() as c:
        return c.session(sid).session.next_tokens


def test_a_turn_from_the_cli_updates_the_gui(open_window, daemon, standin):
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    window = open_window(sid)
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == sid)
    standin.script("An answer from the CLI turn.")
    assert daemon.cli("ask", sid, "asked from the terminal").returncode == 0
    exact = client_session_next(daemon, sid)
    assert exact > standin.chats[-1].prompt_tokens  # the answer is in what the next prompt holds
    wait_until(lambda: window.chat.gauge.tokens == exact and window.chat.gauge.exact)
    wait_until(lambda: "An answer from the CLI turn." in window.chat.log.plain())
    assert "asked from the terminal" in window.chat.log.plain()
    assert window.chat.gauge.toolTip() == f"{exact:,} / 8,192 tokens — click to compact"


def test_two_windows_stay_in_step(open_window, daemon, standin, client):
    s = client.create_session(model=MODEL).session
    a, b = open_window(s.id), open_window(s.id)
    wait_until(lambda: a.chat.session is not None and b.chat.session is not None)
    standin.chunk_delay = 0.01
    standin.script("streamed to both windows alike")
    QTest.keyClicks(a.chat.composer, "hello from window a")
    QTest.keyClick(a.chat.composer, Qt.Key.Key_Return)
    wait_until(lambda: "streamed to both windows alike" in b.chat.log.plain()
               and "streamed to both windows alike" in a.chat.log.plain())
    assert "hello from window a" in b.chat.log.plain()
    wait_until(lambda: a.chat.gauge.tokens == b.chat.gauge.tokens > 0)


def test_window_renders_to_png(open_window, daemon, standin, client, tmp_path):
    s = client.create_session(model=MODEL).session
    converse(client, s.id, 2)
    window = open_window(s.id)
    wait_until(lambda: "question 1 about the plan" in window.chat.log.plain())
    path = tmp_path / "window.png"
    assert window.grab().save(str(path))
    image = window.grab().toImage()
    assert path.stat().st_size > 5000 and image.width() >= 800
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 37)
               for y in range(0, image.height(), 29)}
    assert len(colours) > 5  # a drawn window, not a blank one


def test_stop_cancels_the_answer_being_written(open_window, client, standin):
    s = client.create_session(model=MODEL).session
    window = open_window(s.id)
    wait_until(lambda: window.chat.session is not None and not window.chat.loading)
    standin.chunk_delay = 0.05
    standin.script(" ".join(f"word{i}" for i in range(400)))
    QTest.keyClicks(window.chat.composer, "write a lot")
    QTest.keyClick(window.chat.composer, Qt.Key.Key_Return)
    wait_until(lambda: window.chat.composer.text() == "" and window.chat.stop_button.isVisible())
    wait_until(lambda: "word3" in window.chat.log.plain())
    QTest.mouseClick(window.chat.stop_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: not window.chat.stop_button.isVisible())
    assert "stopped" in window.chat.log.plain() and "word399" not in window.chat.log.plain()
    assert window.chat.composer.last_sent == "write a lot"


def test_the_model_picker_lists_what_ollama_has_and_switches(open_window, client):
    s = client.create_session(model=MODEL).session
    window = open_window(s.id)
    box = window.chat.model
    # the models and the session arrive in either order: wait for both
    wait_until(lambda: box.count() >= 3 and window.chat.session is not None
               and box.currentData() == MODEL and "32,768 tokens" in box.currentText())
    names = [box.itemData(i) for i in range(box.count())]
    assert "small:1b" in names and "nomic-embed-text" not in " ".join(names)
    box.activated.emit(names.index("small:1b"))
    wait_until(lambda: client.session(s.id).session.model == "small:1b")
    wait_until(lambda: window.chat.session.model == "small:1b")


def test_rename_delete_and_search_sessions(open_window, client, monkeypatch):
    first = client.create_session(name="garden plans", model=MODEL).session
    other = long_session(client, 4, name="notes")
    client.import_session(name="kitchen", model=MODEL,
                          messages=[{"role": "user", "content": "tomatoes need staking"}])
    window = open_window(first.id)
    panel = window.panel
    wait_until(lambda: panel.list.count() == 3)
    wait_until(lambda: panel.list.currentItem() is not None
               and panel.list.currentItem().data(Qt.ItemDataRole.UserRole) == first.id)  # the open one
    QTest.keyClicks(panel.search, "gard")
    assert panel.list.count() == 1 and panel.list.item(0).text().startswith("garden plans")
    panel.search.clear()
    QTest.keyClicks(panel.search, "tomatoes")  # no name has it: the daemon's search does
    wait_until(lambda: panel.list.count() == 1 and "1 message match" in panel.list.item(0).text())
    panel.search.clear()
    monkeypatch.setattr("ctxkeep.clients.gui.window.QInputDialog.getText", lambda *a, **k: ("my notes", True))
    window.rename(other.id)
    wait_until(lambda: client.session(other.id).session.name == "my notes")
    monkeypatch.setattr("ctxkeep.clients.gui.window.QMessageBox.question",
                        lambda *a, **k: QMessageBox.StandardButton.Yes)
    window.delete(first.id)
    wait_until(lambda: first.id not in {s.id for s in client.sessions().sessions})
    wait_until(lambda: window.chat.session is None and "deleted" in window.empty_text.text())


def test_a_reopened_session_shows_the_compaction_line_in_the_same_place(open_window, client, standin):
    s = client.create_session(model=MODEL).session
    converse(client, s.id, 6)
    live = open_window(s.id)
    wait_until(lambda: "question 5 about the plan" in live.chat.log.plain())
    standin.script("Six questions about the plan.")
    client.compact(s.id, tail_turns=2)
    wait_until(lambda: "── compacted:" in live.chat.log.plain())
    converse(client, s.id, 1)
    wait_until(lambda: len([e for e in live.chat.log.entries if e.role == "user"]) == 7
               and live.chat.log.entries[-1].role == "assistant" and not live.chat.streaming)
    reopened = open_window(s.id)
    wait_until(lambda: "question 0 about the plan" in reopened.chat.log.plain())
    shown = [e.text for e in reopened.chat.log.entries]
    assert shown == [e.text for e in live.chat.log.entries]


def test_first_run_without_models_pulls_one(open_window, client, standin):
    window = open_window()
    wait_until(lambda: window.models)
    dialog = NewSessionDialog(window, [], "llama3.2")
    assert not dialog.pull_box.isHidden()
    assert "no chat model yet" in dialog.notice.text()
    window.dialog = dialog
    dialog.pull_requested.connect(lambda name: window.worker.submit(requests.ModelsPull(model=name)))
    dialog.pull_name.setText("mistral:7b")
    QTest.mouseClick(dialog.pull_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: dialog.model.findData("mistral:7b") >= 0)
    assert dialog.pull_box.isHidden() and dialog.buttons.buttons()[0].isEnabled()


def last_seen(client, sid: str) -> str:
    """The last message the model sees ("" while a turn has taken it out)."""
    seen = client.history(sid, active=True).messages
    return seen[-1].content if seen else ""


def test_each_message_offers_its_actions_and_each_does_what_it_says(open_window, client, standin, monkeypatch):
    s = client.create_session(model=MODEL, name="acts").session
    standin.script("Blue.", "Teal.", "Carrot.")
    acc = client.send(s.id, "Name a colour")
    wait_terminal(client, acc.generation_id)
    window = open_window(s.id)
    wait_until(lambda: window.chat.session is not None and "Blue." in window.chat.log.plain())
    html = window.chat.log.toHtml()
    for action in ("act:copy:0", "act:edit:0", "act:pin:0", "act:branch:0", "act:retry:1", "act:copy:1"):
        assert action in html, action
    assert "act:edit:1" not in html and "act:retry:0" not in html  # an answer is not edited
    window.chat.log.anchorClicked.emit(QUrl("act:copy:1"))
    assert QGuiApplication.clipboard().text() == "Blue."
    window.chat.log.anchorClicked.emit(QUrl("act:retry:1"))  # a new answer, the old one kept
    wait_until(lambda: "Teal." in window.chat.log.plain())
    wait_until(lambda: last_seen(client, s.id) == "Teal.")
    wait_until(lambda: "act:retry:2" in window.chat.log.toHtml())  # the new answer has its actions too
    log = window.chat.log
    assert "Blue." not in log.plain() and "‹ 2/2 ›" in log.plain()  # one answer, arrows to the other
    log.anchorClicked.emit(QUrl("act:alt:1"))  # the first answer, back in what the model sees
    wait_until(lambda: last_seen(client, s.id) == "Blue.")
    wait_until(lambda: "Blue." in log.plain() and "‹ 1/2 ›" in log.plain() and "Teal." not in log.plain())
    log.anchorClicked.emit(QUrl("act:alt:2"))
    wait_until(lambda: last_seen(client, s.id) == "Teal.")
    log.anchorClicked.emit(QUrl("act:pin:0"))
    wait_until(lambda: client.usage(s.id).pinned == [0])  # the question, pinned
    wait_until(lambda: "act:unpin:0" in log.toHtml() and "act:pin:0" not in log.toHtml())
    log.anchorClicked.emit(QUrl("act:unpin:0"))
    wait_until(lambda: client.usage(s.id).pinned == [] and "act:pin:0" in log.toHtml())
    monkeypatch.setattr("ctxkeep.clients.gui.message_actions.QInputDialog.getMultiLineText",
                        lambda *a, **k: ("Name a vegetable", True))
    window.chat.log.anchorClicked.emit(QUrl("act:edit:0"))  # the last question: in place
    wait_until(lambda: [m.content for m in client.history(s.id, active=True).messages] ==
               ["Name a vegetable", "Carrot."])
    window.chat.log.anchorClicked.emit(QUrl("act:branch:0"))  # opens the branch
    wait_until(lambda: window.chat.session is not None and window.chat.session.branched_from == s.id)
    assert window.chat.session.message_count == 1
    panel = window.panel  # the branch is listed right under its source
    wait_until(lambda: [panel.list.item(i).text().split("\n")[0] for i in range(panel.list.count())]
               == ["acts", "↳ acts (branch)"])


def test_a_reopened_session_shows_the_answer_the_model_sees_its_pins_and_message_times(
        open_window, client, standin):
    s = client.create_session(model=MODEL, name="times").session
    standin.script("Blue.", "Teal.")
    wait_terminal(client, client.send(s.id, "Name a colour").generation_id)
    wait_terminal(client, client.regenerate(s.id).generation_id)
    client.alternative(s.id, 1)  # the first answer put back, by another client
    client.pin(s.id, 0)
    window = open_window(s.id)
    log = window.chat.log
    wait_until(lambda: "‹ 1/2 ›" in log.plain() and "Blue." in log.plain())  # asked of the daemon
    wait_until(lambda: "act:unpin:0" in log.toHtml())
    stored = client.history(s.id).messages[0].created
    cursor = log.document().find("You")  # the question's name: its time on hover
    at = log.cursorRect(cursor).center()
    assert log.tip_at(at) == time.strftime("%a %d %b %Y, %H:%M", time.localtime(stored))
    assert log.tip_at(QPoint(at.x(), at.y() + 200)) == ""
    log.setFocus()  # every action is reachable from the keyboard: Tab to it, Enter
    for _ in range(40):
        QTest.keyClick(log, Qt.Key.Key_Tab)
        if log.textCursor().charFormat().anchorHref() == "act:copy:0":
            break
    assert log.textCursor().charFormat().anchorHref() == "act:copy:0"
    QTest.keyClick(log, Qt.Key.Key_Return)
    assert QGuiApplication.clipboard().text() == "Name a colour"
