"""What a model backend knows about a model."""

import msgspec


class ModelFacts(msgspec.Struct, frozen=True):
    """What /api/show says about a model."""

    context_length: int
    parameter_size: str = ""
    capabilities: tuple[str, ...] = ()
    #: How many requests the server answers at once (0: not said; Ollama queues the others,
    #: llama.cpp's single slot cuts a stream short for another request).
    slots: int = 0


def same_model(installed: str, asked: str) -> bool:
    """Whether `asked` names `installed` (Ollama reads a name without a tag as `:latest`)."""
    return installed == (asked if ":" in asked else f"{asked}:latest") or installed == asked
