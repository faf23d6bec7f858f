"""The window's controls alone (pytest-qt, offscreen): the message box's keys, Markdown, the
gauge's label, themes, codes said in words, a compaction's stop, branches listed."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetricsF

from ctxkeep.clients.gui import theme as themes
from ctxkeep.clients.gui.composer import Composer
from ctxkeep.clients.gui.gauge import ContextGauge, compact_count, usage_text
from ctxkeep.clients.gui.markdown import to_html
from ctxkeep.clients.gui.words import stopped


def test_markdown_with_highlighted_code_and_no_raw_html():
    kept = []
    out = to_html("# Title\n\nSome *words* and `code`.\n\n```python\nx = 1 < 2\n```\n\n<b>raw</b>",
                  themes.DARK, lambda code: kept.append(code) or len(kept) - 1)
    assert "<h1>Title</h1>" in out and "<em>words</em>" in out and "<code>code</code>" in out
    assert 'style="color:' in out and "&lt;" in out  # Pygments' inline colours; < escaped
    assert '<a href="copy:0">Copy</a>' in out and kept == ["x = 1 < 2"]
    assert "<b>raw</b>" not in out


def test_enter_sends_shift_enter_breaks_up_recalls_esc_stops(qtbot):
    box = Composer()
    qtbot.addWidget(box)
    sent, stops = [], []
    box.send_requested.connect(sent.append)
    box.stop_requested.connect(lambda: stops.append(1))
    qtbot.keyClicks(box, "first line")
    qtbot.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box, "second line")
    height = box.height()
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert sent == ["first line\nsecond line"] and box.height() >= height
    box.last_sent = sent[0]
    box.clear()
    qtbot.keyClick(box, Qt.Key.Key_Return)  # empty: nothing sent
    qtbot.keyClick(box, Qt.Key.Key_Up)
    assert box.text() == "first line\nsecond line"
    qtbot.keyClick(box, Qt.Key.Key_Escape)
    assert stops == [1] and len(sent) == 1


@pytest.mark.parametrize("tokens", [1_500, 1_982, 47_200, 999_999, 1_250_000])
def test_the_gauge_label_fits_the_ring(qtbot, tokens):
    gauge = ContextGauge(2_000_000)
    qtbot.addWidget(gauge)
    gauge.set_tokens(tokens, exact=False)
    side = min(gauge.width(), gauge.height())
    ring = max(4.0, side / 10)
    room = side - 3 * ring
    font = gauge.label_font(gauge.centre_text(), room)
    assert QFontMetricsF(font).horizontalAdvance(gauge.centre_text()) <= room


def test_a_count_short_of_the_window_never_reads_as_full():
    assert compact_count(1_982) == "1.9K" and compact_count(2_048) == "2K"
    assert usage_text(1_982, 2_048) == "1,982 / 2,048 tokens · 96 %"
    assert usage_text(14_200, 32_768, exact=False).startswith("~14,200")


@pytest.mark.parametrize("theme", [themes.LIGHT, themes.DARK])
def test_a_theme_sets_the_palette_every_widget_draws_with(qapp, theme):
    themes.apply(qapp, theme)
    palette = qapp.palette()
    assert palette.color(palette.ColorRole.Base) == QColor(theme.surface)
    assert palette.color(palette.ColorRole.Highlight) == QColor(theme.accent)
    assert palette.color(palette.ColorRole.ToolTipBase) == QColor(theme.raised)


def test_codes_are_said_in_words():
    assert "ollama serve" in stopped("ollama_unreachable") and "_" not in stopped("ollama_unreachable")
    assert stopped("cancelled") == "stopped"


def test_a_compaction_stopped_on_purpose_is_not_called_a_failure():
    """Esc during an automatic compaction said "Compaction failed: cancelled"."""
    from ctxkeep.clients.gui.words import compaction_outcome
    for reason in ("cancelled", "cancelled: cancelled by a client"):
        assert compaction_outcome("failed", reason) == "Compaction stopped — the context is as it was"
    assert compaction_outcome("failed", "summary rejected: empty").startswith("Compaction failed")
    assert compaction_outcome("skipped", "nothing to compact").startswith("Nothing to compact yet")


def test_branches_are_listed_under_the_session_they_were_taken_from():
    from ctxkeep.clients.gui.sessions import as_tree
    from ctxkeep.protocol.structs import SessionInfo

    def made(sid, source=""):
        return SessionInfo(id=sid, name=sid, model="m", num_ctx=8192, created=0.0, updated=0.0,
                           branched_from=source)
    newest_first = [made("b2", "a"), made("c"), made("a"), made("b1", "a"), made("b1x", "b1"),
                    made("orphan", "gone")]
    assert [(s.id, depth) for s, depth in as_tree(newest_first)] == [
        ("c", 0), ("a", 0), ("b2", 1), ("b1", 1), ("b1x", 2), ("orphan", 0)]


def test_a_running_compaction_can_be_stopped_like_an_answer(qtbot):
    """Issue 41, item 5: an automatic compaction shows Stop (and Esc reaches it): Cancel goes
    to the daemon for the session; the button goes when the compaction ends."""
    from ctxkeep.clients.gui.chatview import ChatView
    from ctxkeep.clients.gui.theme import DARK
    from ctxkeep.protocol import requests
    from ctxkeep.protocol.events import CompactionRequest, CompactionResult
    from ctxkeep.protocol.structs import SessionInfo
    sent = []
    view = ChatView(sent.append, DARK)
    qtbot.addWidget(view)
    view.show()
    view.session = SessionInfo(id="s1", name="s", model="m", num_ctx=2048, created=0.0, updated=0.0)
    assert view.stop_button.isHidden()
    view.on_event(CompactionRequest(session_id="s1", compaction_id="c1", tokens_before=1900, messages=12, level=3))
    assert not view.stop_button.isHidden()
    view.session = msgspec_busy(view.session)
    view.stop_button.click()
    assert [type(r) for r in sent if isinstance(r, requests.Cancel)] == [requests.Cancel]
    view.on_event(CompactionResult(session_id="s1", compaction_id="c1", status="skipped", reason="cancelled"))
    assert view.stop_button.isHidden()


def msgspec_busy(session):
    import msgspec
    return msgspec.structs.replace(session, busy=True)
