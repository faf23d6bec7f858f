"""The daemon's configuration: TOML at `$XDG_CONFIG_HOME/ctxkeep/config.toml`.

Every key has a default and a description (docs/config.md is generated from
them); an unknown key or a wrong type stops start-up with a message naming
the key (and the nearest valid one). `OLLAMA_HOST`, `CTXKEEP_CONTROL` and
`CTXKEEP_EVENTS` override the file. SIGHUP re-reads it: keys marked live
apply at once, the others at the next start.
"""

import difflib
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from ctxkeep.daemon.config.backends import BackendConfig, check_names
from ctxkeep.daemon.config.recall import RecallConfig
from ctxkeep.daemon.config.recall import described as _doc
from ctxkeep.protocol import DEFAULT_MAX_FRAME_BYTES, paths

#: Keys whose new value applies on SIGHUP without a restart.
LIVE = frozenset({
    "default_model", "num_ctx", "default_options", "max_frame_bytes", "token_batch_ms",
    "drain_timeout", "compaction_tail_turns", "compaction_model", "summary_role",
    "summary_max_tokens", "file_roots", "file_max_bytes", "file_summary_threshold",
    "file_refs_per_message", "file_bytes_per_message",
    "remote_file_refs", "auto_compaction", "compaction_thresholds", "compaction_cooldown", "compaction_min_step",
    "keep_recent_messages", "preserve_user_messages", "embed_model", "embed_builtin", "reply_reserve_tokens",
    "snapshots_kept", "image_turns", "max_image_bytes", "max_images_per_message", "answer_max_share",
    "memory", "memory_budget", "repetition_stop",
})


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and the fix."""


class Config(RecallConfig):
    """Every setting, with its default (recall's and memory's in recall.py); unknown keys are
    refused (`forbid_unknown_fields`, inherited from RecallConfig)."""

    ollama_host: Annotated[str, _doc("Where Ollama listens; OLLAMA_HOST overrides it.")] = \
        "http://127.0.0.1:11434"
    backends: Annotated[list[BackendConfig], _doc(
        "Model servers, one [[backends]] table each (name, kind = \"ollama\" or \"openai\", url, "
        "optional key, models, context_length); [] = one Ollama at ollama_host. A model several "
        "serve goes to the first not answering another turn (docs/operations.md).")] = []
    connect_timeout: Annotated[float, Meta(gt=0), _doc("Seconds to wait for a connection to Ollama.")] = 5.0
    read_timeout: Annotated[float, Meta(gt=0), _doc(
        "Seconds without a byte from Ollama before a call is given up (loading a model can be slow).")] = 600.0
    first_token_timeout: Annotated[float, Meta(gt=0), _doc(
        "Seconds a loaded model may take to send the first token of an answer before the turn "
        "ends with ollama_not_answering (a model still loading gets read_timeout).")] = 120.0
    default_model: Annotated[str, _doc("The model of new sessions.")] = "llama3.2"
    num_ctx: Annotated[int, Meta(ge=256, le=2**24), _doc(
        "The context window of new sessions, in tokens; always sent to Ollama, capped by the "
        "model's context_length.")] = 8192
    default_options: Annotated[dict[str, int | float | str | bool | list[str]], _doc(
        "Ollama options of new sessions, e.g. { temperature = 0.7 }.")] = {}
    control_endpoint: Annotated[str, _doc(
        "The control (ROUTER) endpoint; \"\" = ipc://$XDG_RUNTIME_DIR/ctxkeep/ctl. "
        "CTXKEEP_CONTROL overrides it.")] = ""
    events_endpoint: Annotated[str, _doc(
        "The event (XPUB) endpoint; \"\" = ipc://$XDG_RUNTIME_DIR/ctxkeep/events. "
        "CTXKEEP_EVENTS overrides it.")] = ""
    store_path: Annotated[str, _doc("The LMDB store's folder; \"\" = $XDG_DATA_HOME/ctxkeep/store.")] = ""
    max_frame_bytes: Annotated[int, Meta(ge=1024, le=1 << 30), _doc(
        "The largest request frame accepted, in bytes; larger ones get a frame_too_large error.")] = \
        DEFAULT_MAX_FRAME_BYTES
    token_batch_ms: Annotated[float, Meta(ge=0, le=1000), _doc(
        "Streamed text is published in batches about this often (the first piece at once).")] = 30.0
    event_buffer_bytes: Annotated[int, Meta(ge=1 << 20, le=1 << 34), _doc(
        "Bytes of events queued for one slow subscriber before the newest are dropped (it "
        "sees the gap in `seq`); counted as 4.5 KiB per event, a full token batch.")] = 64 << 20
    max_subscriptions: Annotated[int, Meta(ge=1, le=1 << 20), _doc(
        "Event subscriptions held at once by all subscribers together; past it a "
        "subscription is refused (no greeting, no events). A prefix over 64 bytes, or 32 "
        "refusals, close the subscriber's connection.")] = 4096
    max_subscriptions_per_client: Annotated[int, Meta(ge=1, le=1 << 20), _doc(
        "Event subscriptions one connection may hold at once (a local client is one "
        "connection per process); past it a subscription is refused.")] = 256
    drain_timeout: Annotated[float, Meta(ge=0), _doc(
        "Seconds SIGTERM waits for running generations and compactions before cancelling them.")] = 20.0
    compaction_tail_turns: Annotated[int, Meta(ge=0, le=10_000), _doc(
        "Turns (a user message and what follows it) a manual compaction keeps verbatim.")] = 4
    compaction_model: Annotated[str, _doc(
        "The model that writes summaries; \"\" = each session's own model.")] = ""
    summary_role: Annotated[Literal["assistant", "system"], _doc(
        "The role of summary messages: assistant (safe with templates that need alternating "
        "turns) or system.")] = "assistant"
    summary_max_tokens: Annotated[int, Meta(ge=64, le=1 << 20), _doc(
        "The most tokens a summary may take (also at most a quarter of the window).")] = 1024
    file_roots: Annotated[list[str], _doc(
        "Folders @file references may read; [] = the client's working directory and below.")] = []
    file_max_bytes: Annotated[int, Meta(ge=1, le=1 << 30), _doc(
        "The largest file an @file reference reads, in bytes.")] = 1 << 20
    file_refs_per_message: Annotated[int, Meta(ge=0, le=10000), _doc(
        "The most @file references one message may expand; the rest become notes.")] = 20
    file_bytes_per_message: Annotated[int, Meta(ge=1, le=1 << 32), _doc(
        "The most bytes of files one message may read in all; later references become notes.")] = 8 << 20
    file_summary_threshold: Annotated[int, Meta(ge=0), _doc(
        "Files above this many bytes are summarized unless @path:full is asked.")] = 5 * 1024
    auto_compaction: Annotated[bool, _doc(
        "Compact automatically as the conversation fills its budget (per session: `ctxkeep set`).")] = True
    compaction_thresholds: Annotated[list[Annotated[float, Meta(gt=0, le=1)]], Meta(min_length=3, max_length=3), _doc(
        "Budget fill at which levels 1 (file references to summaries), 2 (prune low-relevance "
        "messages) and 3 (checkpoint) run.")] = msgspec.field(default_factory=lambda: [0.5, 0.65, 0.8])
    compaction_cooldown: Annotated[int, Meta(ge=0), _doc(
        "Messages between two automatic compactions (a prompt that would not fit overrides it).")] = 2
    compaction_min_step: Annotated[float, Meta(ge=0, le=0.9), _doc(
        "The least share of the window a compaction after an answer must free, or it waits: each "
        "pass makes the model re-read the whole prompt (0 = any step; a prompt that would not fit "
        "is always made to fit).")] = 0.15
    repetition_stop: Annotated[int, Meta(ge=0, le=100), _doc(
        "Stop an answer once the same run of words (30 or more words in all) comes back this many "
        "times in a row: a model caught in a loop would write to its cap. The answer is kept, marked "
        "\"stopped: repeating\". 0 = never.")] = 3
    keep_recent_messages: Annotated[int, Meta(ge=1), _doc(
        "The last messages automatic compaction never prunes or summarizes.")] = 5
    preserve_user_messages: Annotated[bool, _doc(
        "Keep user messages word for word (until they would fill half the budget: then the "
        "oldest become a summary shown as such, with a user_summary warning).")] = True
    image_turns: Annotated[int, Meta(ge=0), _doc(
        "Questions after which level 1 sets an image aside (its name in its place) for a model "
        "that sees images; a model without vision only ever reads the names.")] = 3
    max_image_bytes: Annotated[int, Meta(ge=1024), _doc(
        "The largest image a message may carry (bytes; each stored once however often sent; as "
        "base64 it must fit max_frame_bytes).")] = 5 << 20
    max_images_per_message: Annotated[int, Meta(ge=0), _doc(
        "The most images one message may carry.")] = 8
    snapshots_kept: Annotated[int, Meta(ge=1), _doc(
        "Context snapshots kept per session (every compaction takes one); the oldest go "
        "first, so undo walks back at most this many compactions.")] = 50
    answer_max_share: Annotated[float, Meta(gt=0, le=1), _doc(
        "The most of the window one answer may take (never less than the reply room): an answer "
        "that reaches it ends with done_reason \"length\", marked so, and the session still has "
        "room for the next question; a session's own num_predict option overrides it.")] = 0.25
    reply_reserve_tokens: Annotated[int, Meta(ge=0), _doc(
        "Room kept for the answer in every prompt (at most an eighth of the window, and no more than "
        "a session's own num_predict lets an answer take).")] = 1024
    tcp_control: Annotated[str, _doc(
        "A TCP control endpoint for remote clients, e.g. tcp://0.0.0.0:5555; \"\" = none. "
        "Only with CURVE: clients must be listed in the authorized keys (`ctxkeep keys add`).")] = ""
    tcp_events: Annotated[str, _doc(
        "A TCP event endpoint for remote clients, e.g. tcp://0.0.0.0:5556; \"\" = none.")] = ""
    curve_dir: Annotated[str, _doc(
        "Where the server's CURVE key pair and the authorized client keys live; "
        "\"\" = $XDG_CONFIG_HOME/ctxkeep/curve.")] = ""
    remote_file_refs: Annotated[bool, _doc(
        "Whether clients connected over TCP may have @file references read on the daemon's machine.")] = False
    http_listen: Annotated[str, _doc(
        "A TCP address for the HTTP front door (Ollama's and OpenAI's APIs), e.g. "
        "127.0.0.1:11435; \"\" = only its Unix socket, http.sock beside the control socket.")] = ""
    http_auth: Annotated[Literal["token", "none"], _doc(
        "Whether HTTP over TCP needs the bearer token kept in the config folder (http-token; "
        "OpenAI clients send it as their API key); \"none\" only on a loopback address.")] = "token"
    http_max_body_bytes: Annotated[int, Meta(ge=1024), _doc(
        "The largest HTTP request body taken in (as a ZeroMQ frame: room for the largest image as "
        "base64); a larger one is refused with 413.")] = 8 * 1024 * 1024
    http_max_messages: Annotated[int, Meta(ge=2, le=1_000_000), _doc(
        "The most messages one HTTP chat request may carry (its whole conversation, as stateless "
        "clients resend it); more is answered 413 (`ctxkeep import` takes longer histories).")] = 10_000
    http_origins: Annotated[list[str], _doc(
        "Web origins (besides localhost's, app://, file://, tauri:// and vscode's, as Ollama "
        "allows them) whose pages may call the front door over TCP, as OLLAMA_ORIGINS: "
        "\"https://chat.example\", \"http://192.168.1.5:*\"; others get 403.")] = []
    http_max_connections: Annotated[int, Meta(ge=1, le=65536), _doc(
        "The most HTTP connections held at once on each listener, the Unix socket and TCP apart "
        "(fewer when the open-file limit is low: 256 descriptors stay free for the rest); one more "
        "is answered 503 and closed. Over TCP the last quarter is kept for clients with the token: "
        "past it, the oldest connection without it is closed to make room.")] = 512
    http_idle_timeout: Annotated[float, Meta(gt=0, le=3600), _doc(
        "Seconds an HTTP connection may stay idle, or send half a request's headers, before "
        "it is closed.")] = 30.0
    http_body_timeout: Annotated[float, Meta(gt=0, le=3600), _doc(
        "Seconds a request's body may take to arrive before it is answered 408.")] = 60.0

    def resolved_control(self) -> str:
        return os.environ.get("CTXKEEP_CONTROL") or self.control_endpoint or paths.control_endpoint()

    def resolved_events(self) -> str:
        return os.environ.get("CTXKEEP_EVENTS") or self.events_endpoint or paths.events_endpoint()

    def resolved_store(self) -> Path:
        return Path(self.store_path) if self.store_path else paths.data_dir() / "store"

    def resolved_curve_dir(self) -> Path:
        return Path(self.curve_dir) if self.curve_dir else paths.curve_dir()

    def resolved_ollama_host(self) -> str:
        host = os.environ.get("OLLAMA_HOST") or self.ollama_host
        return host if "://" in host else f"http://{host}"


ENV_OVERRIDES = {"ollama_host": "OLLAMA_HOST", "control_endpoint": "CTXKEEP_CONTROL",
                 "events_endpoint": "CTXKEEP_EVENTS"}


#: Keys of earlier versions, and what replaced them.
RENAMED = {"event_hwm": "`event_buffer_bytes` (in bytes, not events)"}


def _explain(exc: msgspec.ValidationError, source: Path) -> str:
    text = str(exc)
    unknown = re.search(r"unknown field `([^`]+)`", text)
    if unknown:
        key = unknown.group(1)
        near = difflib.get_close_matches(key, Config.__struct_fields__, n=1)
        hint = f"; did you mean `{near[0]}`?" if near else ""
        if key in RENAMED:
            hint = f"; it is now {RENAMED[key]}"
        return f"{source}: unknown key `{key}`{hint}"
    where = re.search(r"at `\$\.([^`\[]+)", text)
    key = where.group(1) if where else "?"
    return f"{source}: bad value for `{key}`: {text.split(' - at ')[0]}"


def read_file(path: Path) -> dict[str, Any]:
    """The TOML table of the file ({} when it does not exist)."""
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load(path: Path | None = None) -> Config:
    """The configuration from `path` (default: the XDG location), or defaults when absent."""
    path = path or paths.config_path()
    try:
        config = msgspec.convert(read_file(path), Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None
    problem = check_names(config.backends)
    if problem:
        raise ConfigError(f"{path}: {problem}")
    return config


def sources(path: Path | None = None) -> dict[str, str]:
    """Where each key's value comes from: default, the file, or an environment variable."""
    path = path or paths.config_path()
    in_file = read_file(path)
    out = {}
    for key in Config.__struct_fields__:
        env = ENV_OVERRIDES.get(key)
        if env and os.environ.get(env):
            out[key] = f"environment ({env})"
        elif key in in_file:
            out[key] = str(path)
        else:
            out[key] = "default"
    return out


def apply_live(current: Config, new: Config) -> tuple[list[str], list[str]]:
    """Copy the live keys of `new` into `current`: (keys applied, changed keys needing a restart)."""
    applied, restart = [], []
    for key in Config.__struct_fields__:
        if getattr(current, key) == getattr(new, key):
            continue
        if key in LIVE:
            setattr(current, key, getattr(new, key))
            applied.append(key)
        else:
            restart.append(key)
    return applied, restart


def show(path: Path | None = None) -> str:
    """The effective configuration as TOML lines, each with where it came from."""
    config = load(path)
    origin = sources(path)
    lines = []
    for key in Config.__struct_fields__:
        value = getattr(config, key)
        if key in ENV_OVERRIDES and origin[key].startswith("environment"):
            value = os.environ[ENV_OVERRIDES[key]]
        rendered = msgspec.json.encode(value).decode()
        lines.append(f"{key} = {rendered}  # {origin[key]}")
    return "\n".join(lines)
