"""The daemon's configuration: TOML at `$XDG_CONFIG_HOME/ctxkeep/config.toml`.

Every key has a default; an unknown key or a wrong type stops start-up with a
message naming the key (and the nearest valid one). `OLLAMA_HOST`,
`CTXKEEP_CONTROL` and `CTXKEEP_EVENTS` override the file.
"""

import difflib
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ..protocol import DEFAULT_MAX_FRAME_BYTES, paths
from .files.expand import FileSettings


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and the fix."""


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every setting, with its default."""

    #: Where Ollama listens (OLLAMA_HOST overrides).
    ollama_host: str = "http://127.0.0.1:11434"
    #: Seconds to wait for a connection to Ollama.
    connect_timeout: Annotated[float, Meta(gt=0)] = 5.0
    #: Seconds without a byte from Ollama before a call is given up (a model load can be slow).
    read_timeout: Annotated[float, Meta(gt=0)] = 600.0
    #: The model of new sessions.
    default_model: str = "llama3.2"
    #: The context window of new sessions (capped by the model's context_length).
    num_ctx: Annotated[int, Meta(ge=256, le=2**24)] = 8192
    #: Ollama options of new sessions (temperature, top_p, ...).
    default_options: dict[str, int | float | str | bool | list[str]] = {}
    #: The ROUTER and XPUB endpoints ("" = ipc:// in $XDG_RUNTIME_DIR/ctxkeep).
    control_endpoint: str = ""
    events_endpoint: str = ""
    #: The store's folder ("" = $XDG_DATA_HOME/ctxkeep/store).
    store_path: str = ""
    #: Largest accepted request frame, in bytes.
    max_frame_bytes: Annotated[int, Meta(ge=1024, le=1 << 30)] = DEFAULT_MAX_FRAME_BYTES
    #: Streamed text is published in batches about this often (milliseconds).
    token_batch_ms: Annotated[float, Meta(ge=0, le=1000)] = 30.0
    #: Send high-water mark of the event socket (messages queued per subscriber).
    event_hwm: Annotated[int, Meta(ge=1000)] = 100_000
    #: Seconds SIGTERM waits for running generations before cancelling them.
    drain_timeout: Annotated[float, Meta(ge=0)] = 20.0
    #: Turns (user message and what follows) a manual compaction keeps verbatim.
    compaction_tail_turns: Annotated[int, Meta(ge=0, le=10_000)] = 4
    #: The model that writes summaries ("" = each session's own model).
    compaction_model: str = ""
    #: The role of summary messages: assistant (safe with templates that need
    #: alternating turns) or system.
    summary_role: Literal["assistant", "system"] = "assistant"
    #: The most tokens a summary may take (also capped at a quarter of the window).
    summary_max_tokens: Annotated[int, Meta(ge=64, le=1 << 20)] = 1024
    #: Folders @file references may read ([] = the client's working directory and below).
    file_roots: list[str] = []
    #: Largest file an @file reference reads, in bytes.
    file_max_bytes: Annotated[int, Meta(ge=1, le=1 << 30)] = 1 << 20
    #: Files above this size are summarized unless `@path:full` is asked.
    file_summary_threshold: Annotated[int, Meta(ge=0)] = 5 * 1024

    def file_settings(self) -> "FileSettings":
        return FileSettings(roots=list(self.file_roots), max_bytes=self.file_max_bytes,
                            summary_threshold=self.file_summary_threshold)

    def resolved_control(self) -> str:
        return os.environ.get("CTXKEEP_CONTROL") or self.control_endpoint or paths.control_endpoint()

    def resolved_events(self) -> str:
        return os.environ.get("CTXKEEP_EVENTS") or self.events_endpoint or paths.events_endpoint()

    def resolved_store(self) -> Path:
        return Path(self.store_path) if self.store_path else paths.data_dir() / "store"

    def resolved_ollama_host(self) -> str:
        host = os.environ.get("OLLAMA_HOST") or self.ollama_host
        return host if "://" in host else f"http://{host}"


def _explain(exc: msgspec.ValidationError, source: Path) -> str:
    text = str(exc)
    unknown = re.search(r"unknown field `([^`]+)`", text)
    if unknown:
        key = unknown.group(1)
        near = difflib.get_close_matches(key, Config.__struct_fields__, n=1)
        hint = f"; did you mean `{near[0]}`?" if near else ""
        return f"{source}: unknown key `{key}`{hint}"
    where = re.search(r"at `\$\.([^`]+)`", text)
    key = where.group(1) if where else "?"
    return f"{source}: bad value for `{key}`: {text.split(' - at ')[0]}"


def load(path: Path | None = None) -> Config:
    """The configuration from `path` (default: the XDG location), or defaults when absent."""
    path = path or paths.config_path()
    if not path.exists():
        return Config()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None
