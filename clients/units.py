"""Quantities as people read them, for every client."""


def size(n: int) -> str:
    """Bytes in decimal units, as Ollama and `ollama list` show them: 4.7 GB, 274 MB."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return ""
