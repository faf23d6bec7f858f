"""What an OpenAI-compatible server says of a model's window, where it says it: vLLM's
`max_model_len` in /v1/models, llama.cpp's /props (`default_generation_settings.n_ctx`, the
window of one slot, `modalities.vision` and `total_slots`), LM Studio's /api/v0/models/{model}
(`loaded_context_length`, else `max_context_length`; `type: "vlm"`). OpenAI's API itself
has no field for it: a server that says none of these needs `context_length` in its
[[backends]] table."""

from typing import Any
from urllib.parse import quote

from ctxkeep.daemon.backends.facts import ModelFacts
from ctxkeep.daemon.backends.openai_client import server_root


async def get_json(client: Any, url: str) -> dict[str, Any] | None:
    """GET `url` through the client's connection pool: its JSON object, or None when the
    server has no such page (or answers anything but a JSON object)."""
    try:
        found = await client.get(url, cast_to=object)
    except Exception:  # a server without the page: not this kind of server
        return None
    return found if isinstance(found, dict) else None


async def model_facts(client: Any, url: str, model: str, entry: dict[str, Any] | None) -> ModelFacts:
    """The model's window (0: the server does not say) and capabilities; `entry` is its
    item of /v1/models."""
    vision = False
    length = int((entry or {}).get("max_model_len") or 0)
    slots = 256 if length else 0  # vLLM batches whatever comes
    if not length:
        props = await get_json(client, f"{server_root(url)}/props") or {}
        settings = props.get("default_generation_settings") or {}
        length = int(settings.get("n_ctx") or props.get("n_ctx") or 0)
        vision = bool((props.get("modalities") or {}).get("vision"))
        slots = int(props.get("total_slots") or 0)
    if not length:
        about = await get_json(client, f"{server_root(url)}/api/v0/models/{quote(model, safe='')}") or {}
        length = int(about.get("loaded_context_length") or about.get("max_context_length") or 0)
        vision = vision or about.get("type") == "vlm"
    return ModelFacts(context_length=length, capabilities=("completion",) + (("vision",) if vision else ()),
                      slots=slots)
