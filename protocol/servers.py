"""The model servers as clients see them: their models and whether they answer."""

import msgspec

from .counts import Count


class ModelInfo(msgspec.Struct, kw_only=True):
    """A model installed in Ollama (from /api/tags, /api/show and /api/ps)."""

    name: str
    #: Bytes on disk.
    size: int = 0
    #: E.g. "7.6B" ("" when Ollama does not say).
    parameter_size: str = ""
    family: str = ""
    #: The most tokens the model takes (/api/show's `context_length`; 0: unknown).
    context_length: int = 0
    #: Whether Ollama has it in memory now (/api/ps).
    loaded: bool = False
    #: Whether it is what new sessions use when they name no model.
    default: bool = False
    #: The model servers (their names in config.toml) that serve it.
    hosts: list[str] = []


class OllamaStatus(msgspec.Struct, kw_only=True):
    """What the daemon last learnt about its Ollama server."""

    host: str
    #: Whether the last check or model call reached it (False until `checked`).
    reachable: bool
    version: str = ""
    error: str = ""
    #: False until the first check or model call has an outcome.
    checked: bool = True


class BackendStatus(OllamaStatus, kw_only=True):
    """One model server of the daemon's (`[[backends]]` in config.toml)."""

    #: Its name in config.toml ("ollama" when none is configured).
    name: str = ""
    #: "ollama" (Ollama's API) or "openai" (an OpenAI-compatible server).
    kind: str = "ollama"
    #: Model calls it is answering now.
    busy: Count = 0
    #: While it is down: seconds until it is tried again (the wait doubles, up to 30 s).
    retry_in: float = 0.0
