"""New session: a name, a model picked from what Ollama has, a system prompt. With no
model installed it says so and pulls one, with progress."""

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...protocol.structs import ModelInfo
from ..present import chat_models, size
from . import theme as themes

#: What the first-run path offers to pull.
SUGGESTED_MODEL = "qwen2.5:7b"


def model_label(m: ModelInfo) -> str:
    """`qwen2.5:7b — 7.6B, 4.7 GB, 32,768 tokens`"""
    facts = [f for f in (m.parameter_size, size(m.size) if m.size else "",
                         f"{m.context_length:,} tokens" if m.context_length else "") if f]
    return f"{m.name} — {', '.join(facts)}" if facts else m.name


def fill_models(box: QComboBox, models: list[ModelInfo], selected: str) -> None:
    """The combo box's items: one per model (its name as the item's data)."""
    box.blockSignals(True)
    box.clear()
    for m in models:
        box.addItem(model_label(m), m.name)
    at = box.findData(selected)
    if at < 0 and selected:
        box.addItem(f"{selected} — not installed", selected)
        at = box.count() - 1
    box.setCurrentIndex(max(0, at))
    box.blockSignals(False)


class NewSessionDialog(QDialog):
    """Accepting it means: create a session with `values()`."""

    pull_requested = Signal(str)

    def __init__(self, parent: QWidget | None, models: list[ModelInfo], default: str,
                 problem: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("New chat")
        self.setMinimumWidth(440)
        self.name = QLineEdit()
        self.name.setPlaceholderText("optional: chat-N when empty")
        self.model = QComboBox()
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText("optional: how the model should answer")
        self.system.setFixedHeight(70)
        self.notice = themes.label("dim", wrap=True)
        self.pull_name = QLineEdit(SUGGESTED_MODEL)
        self.pull_button = QPushButton("Pull")
        self.pull_button.clicked.connect(lambda: self._pull())
        self.progress = QProgressBar()
        self.progress.hide()
        pull_row = QHBoxLayout()
        pull_row.addWidget(self.pull_name, 1)
        pull_row.addWidget(self.pull_button)
        self.pull_box = QWidget()
        self.pull_box.setLayout(pull_row)
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Model", self.model)
        form.addRow("System prompt", self.system)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok |
                                        QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.notice)
        layout.addWidget(self.pull_box)
        layout.addWidget(self.progress)
        layout.addWidget(self.buttons)
        self.set_models(models, default, problem)

    def set_models(self, models: list[ModelInfo], default: str, problem: str = "") -> None:
        usable = chat_models(models)
        installed = {m.name for m in usable}
        fill_models(self.model, usable, default if default in installed or not usable else usable[0].name)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        if problem:
            self.notice.setText(f"{problem}. You can still create the chat; it answers once "
                                "Ollama is up.")
        elif not usable:
            self.notice.setText("Ollama has no chat model yet. Pull one to start — "
                                f"{SUGGESTED_MODEL} is a good first choice (4.7 GB); "
                                "https://ollama.com/library lists others.")
        else:
            self.notice.setText("" if default in installed else
                                f"The default model, {default}, is not installed.")
        self.notice.setVisible(bool(self.notice.text()))
        self.pull_box.setVisible(not usable and not problem)
        ok.setEnabled(bool(usable) or bool(problem))

    def show_progress(self, status: str, completed: int, total: int) -> None:
        self.progress.show()
        self.progress.setFormat(f"{status} %p%" if total else status)
        self.progress.setRange(0, 100 if total else 0)
        if total:
            self.progress.setValue(int(100 * completed / total))

    def pull_ended(self, ok: bool, message: str) -> None:
        self.pull_button.setEnabled(True)
        self.progress.hide()
        if not ok:
            self.notice.setText(f"Could not pull: {message}")

    def values(self) -> tuple[str, str, str]:
        """(name, model, system prompt)"""
        return self.name.text().strip(), self.model.currentData() or "", self.system.toPlainText().strip()

    def _pull(self) -> None:
        name = self.pull_name.text().strip()
        if name:
            self.pull_button.setEnabled(False)
            self.show_progress("starting", 0, 0)
            self.pull_requested.emit(name)
