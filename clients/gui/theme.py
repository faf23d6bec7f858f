"""Light and dark themes: one set of colours drives the Qt palette (so scrollbars, menus
and tooltips match), the style sheet, the chat log's HTML and the code highlighting.

`system` follows the platform's colour scheme, also when it changes while the app runs.
"""

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QLabel


@dataclass(frozen=True)
class Theme:
    """The colours of one theme."""

    name: str
    window: str
    surface: str  # the chat log, inputs
    raised: str  # buttons, the user's messages
    text: str
    dim: str
    border: str
    accent: str  # the open session, focus, links
    accent_text: str
    user: str
    model: str
    code: str  # code block background
    error: str
    banner: str
    #: The Pygments style of code blocks.
    pygments: str


DARK = Theme(name="dark", window="#25292d", surface="#1c1f22", raised="#2d3236", text="#d8dcdf",
             dim="#8a9096", border="#3a3f44", accent="#3d6a8f", accent_text="#ffffff",
             user="#8fb8de", model="#7ec8a4", code="#15181a", error="#e08080", banner="#7a3b3b",
             pygments="monokai")
LIGHT = Theme(name="light", window="#f3f4f6", surface="#ffffff", raised="#e8ebef", text="#1f2328",
              dim="#656d76", border="#d0d7de", accent="#cfe3f7", accent_text="#0b2540",
              user="#0969da", model="#1a7f37", code="#f6f8fa", error="#b42318", banner="#f8d7d3",
              pygments="default")


def system_theme() -> Theme:
    """The platform's colour scheme (dark when it says nothing and its palette is dark)."""
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return DARK
    if scheme == Qt.ColorScheme.Light:
        return LIGHT
    window = QGuiApplication.palette().color(QPalette.ColorRole.Window)
    return DARK if window.lightness() < 128 else LIGHT


def pick(choice: str) -> Theme:
    """`light`, `dark`, or `system`."""
    return {"light": LIGHT, "dark": DARK}.get(choice) or system_theme()


def palette(theme: Theme) -> QPalette:
    p = QPalette()
    role = QPalette.ColorRole
    for r, colour in ((role.Window, theme.window), (role.WindowText, theme.text),
                      (role.Base, theme.surface), (role.AlternateBase, theme.raised),
                      (role.Text, theme.text), (role.Button, theme.raised),
                      (role.ButtonText, theme.text), (role.ToolTipBase, theme.raised),
                      (role.ToolTipText, theme.text), (role.Highlight, theme.accent),
                      (role.HighlightedText, theme.accent_text), (role.Link, theme.user),
                      (role.PlaceholderText, theme.dim), (role.Mid, theme.border),
                      (role.Dark, theme.border), (role.Light, theme.raised)):
        p.setColor(r, QColor(colour))
    for r in (role.Text, role.WindowText, role.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, r, QColor(theme.dim))
    return p


def style_sheet(t: Theme) -> str:
    # Nothing here styles the chat log: a style sheet rule on it would make Qt paint it
    # through the style-sheet engine, doubling the cost of every streamed piece (the
    # palette's Base colour is its background).
    return f"""
QPlainTextEdit#composer, QLineEdit {{ background: {t.surface}; border: 1px solid {t.border};
    border-radius: 6px; padding: 4px 6px; }}
QPlainTextEdit#composer:focus, QLineEdit:focus {{ border-color: {t.user}; }}
QListWidget#sessions {{ background: {t.window}; border: none; outline: none; }}
QListWidget#sessions::item {{ padding: 6px 8px; border-radius: 6px; }}
QListWidget#sessions::item:selected {{ background: {t.accent}; color: {t.accent_text}; }}
QListWidget#sessions::item:hover:!selected {{ background: {t.raised}; }}
QPushButton, QToolButton {{ background: {t.raised}; border: 1px solid {t.border};
    border-radius: 6px; padding: 5px 12px; }}
QPushButton:hover, QToolButton:hover {{ border-color: {t.user}; }}
QPushButton#stop {{ color: {t.error}; }}
QLabel#banner {{ background: {t.banner}; padding: 8px; }}
QLabel#dim, QLabel#usage {{ color: {t.dim}; }}
QLabel#empty {{ color: {t.dim}; font-size: 15px; }}
QSplitter::handle {{ background: {t.border}; }}
QToolTip {{ background: {t.raised}; color: {t.text}; border: 1px solid {t.border}; }}
"""


def label(name: str, wrap: bool = False) -> QLabel:
    """A label named for the style sheet's rules (`#banner`, `#dim`, `#usage`, `#empty`)."""
    made = QLabel()
    made.setObjectName(name)
    made.setWordWrap(wrap)
    return made


def apply(app: QApplication, theme: Theme) -> None:
    """Fusion (it draws everything from the palette), the palette, and the style sheet."""
    app.setStyle("Fusion")
    app.setPalette(palette(theme))
    app.setStyleSheet(style_sheet(theme))
