"""The model servers of config.toml: one `[[backends]]` table each.

    [[backends]]
    name = "gpu1"                      # how status, `ctxkeep models` and logs call it
    kind = "openai"                    # "ollama" or "openai" (any OpenAI-compatible server)
    url = "http://10.0.0.5:8080/v1"
    key = "sk-..."                     # optional: the server's API key
    models = ["qwen2.5-7b-instruct"]   # optional: only these are asked of it
    context_length = 8192              # optional: the window, where the server does not say it

With no table, ctxkeepd has one Ollama backend at `ollama_host` (OLLAMA_HOST).
"""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

#: A backend's name: letters, digits, `.`, `_`, `-`.
Name = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class BackendConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One model server."""

    name: Name
    kind: Literal["ollama", "openai"] = "ollama"
    #: http(s)://host:port (an OpenAI server's may end in /v1; it is added when it does not).
    url: Annotated[str, Meta(pattern=r"^https?://")]
    key: str = ""
    #: The models to ask of it ([]: whatever it lists).
    models: list[str] = []
    #: The window of its models in tokens (0: what the server says).
    context_length: Annotated[int, Meta(ge=0, le=2**24)] = 0


def check_names(backends: list[BackendConfig]) -> str:
    """Why the tables cannot be used together ("" when they can): names must differ."""
    seen: set[str] = set()
    for b in backends:
        if b.name in seen:
            return f"two [[backends]] are named {b.name!r}: give each its own name"
        seen.add(b.name)
    return ""
