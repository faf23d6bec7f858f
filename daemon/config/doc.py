"""docs/config.md, generated from the configuration's own descriptions."""

import msgspec

from ctxkeep.daemon.config.settings import LIVE, Config


def render_markdown() -> str:
    """docs/config.md."""
    out = ["# Configuration", "",
           "_Generated from `daemon/config/` by `ctxkeepd config doc`; "
           "do not edit by hand._", "",
           "ctxkeepd reads `$XDG_CONFIG_HOME/ctxkeep/config.toml` (default "
           "`~/.config/ctxkeep/config.toml`; `ctxkeepd --config PATH` for another). Every key "
           "is optional. An unknown key or a value of the wrong type stops start-up with a "
           "message naming the key. `ctxkeep config show` prints the effective values and "
           "where each comes from. `systemctl --user reload ctxkeep` (SIGHUP) re-reads the "
           "file: keys marked *live* apply at once, the others at the next start.", "",
           "Environment: `OLLAMA_HOST` overrides `ollama_host`; `CTXKEEP_CONTROL` and "
           "`CTXKEEP_EVENTS` override the endpoints (clients read them too).", "",
           "| key | type | default | live | meaning |", "|---|---|---|---|---|"]
    info = msgspec.inspect.type_info(Config)
    for f in info.fields:  # type: ignore[attr-defined]
        t = f.type
        description = ""
        if isinstance(t, msgspec.inspect.Metadata):
            description = (t.extra_json_schema or {}).get("description", "")
            t = t.type
        default = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
        type_name = {"Str": "string", "Int": "integer", "Float": "number", "Bool": "boolean",
                     "Dict": "table", "List": "array", "Literal": "string"}.get(
            type(t).__name__.removesuffix("Type"), type(t).__name__)
        out.append(f"| `{f.name}` | {type_name} | `{msgspec.json.encode(default).decode()}` | "
                   f"{'yes' if f.name in LIVE else ''} | {description} |")
    out += ["", "Example:", "", "```toml", 'default_model = "qwen2.5:7b"', "num_ctx = 16384",
            "compaction_tail_turns = 6", 'file_roots = ["~/src", "~/notes"]', "", "[default_options]",
            "temperature = 0.4", "", "[[backends]]", 'name = "ollama"', 'url = "http://127.0.0.1:11434"',
            "", "[[backends]]", 'name = "gpu1"', 'kind = "openai"', 'url = "http://10.0.0.5:8000/v1"',
            'models = ["Qwen/Qwen2.5-7B-Instruct"]', "```", "",
            "Each `[[backends]]` table: `name`, `kind` (`ollama` or `openai`), `url`, and optionally "
            "`key` (the server's API key), `models` (only these are asked of it) and `context_length` "
            "(the window, for a server that does not say it). See docs/operations.md.", ""]
    return "\n".join(out)
