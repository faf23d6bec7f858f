"""The memory window (issue 43): Edit ▸ Memory… searches what memory could bring back into
a prompt, opens a passage where it was said, and forgets a message or a whole chat."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from test_gui import MODEL, app, open_window, wait_until  # noqa: E402,F401  (fixtures)


def test_the_memory_window_searches_opens_and_forgets(open_window, client):
    garden = client.import_session(name="garden", model=MODEL, messages=[
        {"role": "user", "content": "We planted three quince trees by the old wall this spring."},
        {"role": "assistant", "content": "Quince trees like that sheltered, sunny spot."}]).session
    other = client.create_session(name="other", model=MODEL).session
    window = open_window(other.id)
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == other.id)
    window.memory.open_for(window.chat.session)
    view = window.memory
    view.words.setText("quince trees")
    view.search()
    wait_until(lambda: view.list.count() == 2)
    assert view.list.item(0).text().startswith("garden #")
    assert not view.forget_button.isEnabled()  # nothing chosen yet
    view.list.setCurrentRow([h.seq for h in view.hits].index(0))
    view.open_selected()
    wait_until(lambda: window.chat.session is not None and window.chat.session.id == garden.id)
    view.forget(whole_chat=False)
    wait_until(lambda: "Memory forgot #0 of garden" in view.note.text() and view.list.count() == 1)
    assert client.session(garden.id).session.forgotten == [0]
    view.list.setCurrentRow(0)
    view.forget(whole_chat=True)
    wait_until(lambda: "the whole chat" in view.note.text() and view.list.count() == 0)
    assert client.session(garden.id).session.remembered is False
