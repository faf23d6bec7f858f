"""Message text as the HTML QTextDocument shows: CommonMark (markdown-it-py, raw HTML off)
with tables and strikethrough; fenced code highlighted by Pygments with inline styles, and
a Copy link under each block (`copy:N`, N indexing the blocks the caller keeps)."""

import html
from collections.abc import Callable

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from .theme import Theme

#: Called with a code block's text; returns its index for the `copy:N` link.
KeepCode = Callable[[str], int]

_parser = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
_formatters: dict[str, HtmlFormatter] = {}


def _lexer(language: str):
    try:
        return get_lexer_by_name(language) if language else TextLexer()
    except ClassNotFound:
        return TextLexer()


def code_html(code: str, language: str, theme: Theme, index: int) -> str:
    """A highlighted block in a one-cell table (QTextDocument draws a cell's background and
    padding, not a <pre>'s), with the block's Copy link."""
    formatter = _formatters.get(theme.pygments)
    if formatter is None:
        formatter = _formatters[theme.pygments] = HtmlFormatter(
            style=theme.pygments, noclasses=True, nowrap=True)
    body = highlight(code, _lexer(language), formatter).rstrip("\n")
    label = html.escape(language or "code")
    return (f'<table width="100%" cellpadding="8" cellspacing="0" style="background:{theme.code}; '
            f'border: 1px solid {theme.border};"><tr><td>'
            f'<pre style="font-family: monospace; margin: 0;">{body}</pre></td></tr></table>'
            f'<p style="margin-top: 2px;"><span style="color:{theme.dim};">{label}</span> · '
            f'<a href="copy:{index}">Copy</a></p>')


def to_html(text: str, theme: Theme, keep: KeepCode) -> str:
    """`text` rendered; each fenced or indented code block handed to `keep`."""
    tokens = _parser.parse(text)
    out: list[str] = []
    start = 0
    for i, token in enumerate(tokens):
        if token.type in ("fence", "code_block") and token.level == 0:
            out.append(_parser.renderer.render(tokens[start:i], _parser.options, {}))
            language = token.info.strip().split(" ")[0] if token.type == "fence" else ""
            code = token.content.rstrip("\n")
            out.append(code_html(code, language, theme, keep(code)))
            start = i + 1
    out.append(_parser.renderer.render(tokens[start:], _parser.options, {}))
    return "".join(out)
