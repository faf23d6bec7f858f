"""The memory window (issue 43): Edit ▸ Memory… searches what memory could bring back into
a prompt, opens a passage where it was said, and forgets a message or a whole chat."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from window_steps import MODEL, wait_until


def test_the_memory_window_searches_opens_and_forgets(open_window, client):
    garden = client.import_session(name="garden", model=MODEL, messages=[
        {"role": "user", "content": "We planted three quince trees by the old wall this spring."},
        {"role": "assistant", "content": "Quince trees like that sheltered, sunny spot."}]).session
    other = client.create_session(name="other", model=MODEL).session
    window = open_window(other.id)
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == other.id)
    client.send(other.id, "How are the quince trees by the wall doing?")
    wait_until(lambda: "recalled 2 messages of other chats into this question's prompt" in window.chat.log.plain())
    line = next(e for e in window.chat.log.entries if e.kind == "recall")
    window.chat.log.toggle(line)  # opened: each line links to the message in its chat
    assert "«garden» #0 user: We planted three quince trees" in window.chat.log.plain()
    assert line.links[0] == (garden.id, 0)
    from PySide6.QtCore import QUrl
    window.chat.log.anchorClicked.emit(QUrl(f"open:{garden.id}:0"))
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == garden.id)
    window.open_session(other.id)
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == other.id)
    window.memory.open_for(window.chat.session)
    view = window.memory
    assert view.words.text() == ""  # opened empty: the chat's name is no question to memory
    view.words.setText("quince trees")
    view.search()
    gardens = lambda: [(h.session_name, h.seq) for h in view.hits if h.session_name == "garden"]
    wait_until(lambda: sorted(gardens()) == [("garden", 0), ("garden", 1)])
    assert any(view.list.item(i).text().startswith("garden #0 · user") for i in range(view.list.count()))
    assert not view.forget_button.isEnabled()  # nothing chosen yet
    view.list.setCurrentRow([(h.session_name, h.seq) for h in view.hits].index(("garden", 0)))
    view.open_selected()
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == garden.id)
    view.forget(whole_chat=False)
    wait_until(lambda: "Memory forgot #0 of garden" in view.note.text() and gardens() == [("garden", 1)])
    assert client.session(garden.id).session.forgotten == [0]
    view.list.setCurrentRow([(h.session_name, h.seq) for h in view.hits].index(("garden", 1)))
    view.forget(whole_chat=True)
    wait_until(lambda: "the whole chat" in view.note.text() and gardens() == [])
    assert client.session(garden.id).session.remembered is False


def test_what_the_model_sees_lists_the_prompts_parts_with_their_tokens(open_window, client):
    """Issue 41, item 7: the window shows the prompt as it would be sent, part by part."""
    s = client.import_session(name="parts", model=MODEL, system="Answer in French.", messages=[
        {"role": "user", "content": "Bonjour, the first question"},
        {"role": "assistant", "content": "Bonjour ! The first answer"}]).session
    window = open_window(s.id)
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == s.id)
    window.prompt.open_for(window.chat.session)
    wait_until(lambda: "user #0" in window.prompt.text.toPlainText())
    text = window.prompt.text.toPlainText()
    assert text.index("system prompt · ~") < text.index("Answer in French.") < text.index("user #0 · ~") \
        < text.index("assistant #1 · ~")
    assert "of 8,192 tokens before the next message" in window.prompt.total.text()
