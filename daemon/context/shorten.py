"""A long tool result as its head and tail, with what was left out said in between: the
short form level-1 compaction gives old tool results (coding agents shorten them first)."""

#: Lines kept from the start and from the end of a long result.
HEAD_LINES, TAIL_LINES = 20, 10
#: Characters kept from the start and from the end of a result of few, long lines.
HEAD_CHARS, TAIL_CHARS = 1500, 500


def shortened(text: str) -> str:
    """`text` as its first and last lines (or characters), with `[… N lines omitted …]`
    between; `text` itself when that would not make it shorter."""
    lines = text.split("\n")
    if len(lines) > HEAD_LINES + TAIL_LINES + 1:
        omitted = len(lines) - HEAD_LINES - TAIL_LINES
        text = "\n".join([*lines[:HEAD_LINES], f"[… {omitted} lines omitted …]", *lines[-TAIL_LINES:]])
    if len(text) > HEAD_CHARS + TAIL_CHARS + 64:
        omitted = len(text) - HEAD_CHARS - TAIL_CHARS
        text = f"{text[:HEAD_CHARS]}\n[… {omitted} characters omitted …]\n{text[-TAIL_CHARS:]}"
    return text
