"""What every client shows the same way: sizes, and which models one can chat with."""

from ..protocol.structs import ModelInfo


def size(n: int) -> str:
    """Bytes in decimal units, as Ollama and `ollama list` show them: 4.7 GB, 274 MB."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return ""


def chat_models(models: list[ModelInfo]) -> list[ModelInfo]:
    """The models one can chat with: not the embedding models (nomic-embed-text, ...)."""
    return [m for m in models if "embed" not in m.name]
