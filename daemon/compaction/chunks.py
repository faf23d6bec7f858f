"""Text cut to fit a summarization call: transcript lines in chunks of a token budget, and
a text in two halves at a paragraph, line or space near its middle. Pure functions."""

import math


def chunk_lines(lines: list[tuple[str, int]], budget: int) -> list[str]:
    """Greedy chunks of transcript lines, each at most `budget` estimated tokens; a line
    longer than the budget is cut into pieces that fit."""
    budget = max(1, budget)
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for text, tokens in lines:
        pieces = [(text, tokens)]
        if tokens > budget:
            n = math.ceil(tokens / budget)
            size = math.ceil(len(text) / n)
            pieces = [(text[i:i + size], math.ceil(tokens / n)) for i in range(0, len(text), size)]
        for piece, cost in pieces:
            if current and used + cost > budget:
                chunks.append("".join(current))
                current, used = [], 0
            current.append(piece)
            used += cost
    if current:
        chunks.append("".join(current))
    return chunks


def halves(body: str) -> tuple[str, str] | None:
    """`body` cut in two near its middle, at a paragraph (else a line, else a space);
    None when it is too short to cut."""
    if len(body) < 200:
        return None
    middle, reach = len(body) // 2, len(body) // 4
    for mark in ("\n\n", "\n", " "):
        found = [c for c in (body.rfind(mark, middle - reach, middle), body.find(mark, middle, middle + reach))
                 if c > 0]
        if found:
            cut = min(found, key=lambda c: abs(c - middle)) + len(mark)
            return body[:cut], body[cut:]
    return body[:middle], body[middle:]
