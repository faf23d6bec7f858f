"""The main window's menus: each item, the window's action it runs, and its shortcut."""

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMessageBox

from ...protocol import DAEMON_VERSION


def build_menus(self: Any) -> None:
    """The main window's (`self`, a window.MainWindow) menus and their shortcuts."""
    def add(menu, text, slot, keys=None) -> QAction:
        action = menu.addAction(text)
        action.triggered.connect(slot)
        if keys is not None:
            action.setShortcut(keys)
        return action
    bar = self.menuBar()
    file = bar.addMenu("&File")
    add(file, "&New chat…", self.new_session, QKeySequence.StandardKey.New)
    add(file, "&Rename chat…", lambda: self.rename(self.panel.selected_id()), QKeySequence(Qt.Key.Key_F2))
    add(file, "&Delete chat…", lambda: self.delete(self.panel.selected_id()))
    file.addSeparator()
    add(file, "&Quit", self.close, QKeySequence.StandardKey.Quit)
    edit = bar.addMenu("&Edit")
    add(edit, "&Search chats", self.focus_search, QKeySequence("Ctrl+K"))
    add(edit, "&Memory…", lambda: self.memory.open_for(self.chat.session), QKeySequence("Ctrl+Shift+M"))
    chat = bar.addMenu("&Chat")
    add(chat, "&Stop answer", self.chat.stop, QKeySequence(Qt.Key.Key_Escape))
    add(chat, "&Compact context", self.chat.compact, QKeySequence("Ctrl+Shift+C"))
    add(chat, "&Undo last compaction", self.undo_compaction)
    add(chat, "&What the model sees…", lambda: self.prompt.open_for(self.chat.session), QKeySequence("Ctrl+Shift+P"))
    view = bar.addMenu("&View")
    group = QActionGroup(self)
    for choice in ("system", "light", "dark"):
        action = add(view, f"{choice.title()} theme", lambda _=False, c=choice: self.set_theme(c))
        action.setCheckable(True)
        action.setChecked(choice == self.theme_choice)
        group.addAction(action)
    help_menu = bar.addMenu("&Help")
    add(help_menu, "&About ctxkeep", lambda: QMessageBox.about(
        self, "ctxkeep", f"ctxkeep-gui {DAEMON_VERSION}: long conversations with local models, "
                         "kept inside their context window by ctxkeepd."))
