"""Where the daemon's sockets, store and configuration live (XDG base directories).

Pure functions of the environment: nothing here creates a file.
"""

import os
from collections.abc import Mapping
from pathlib import Path

#: ipc:// paths longer than this are rejected by the kernel (sun_path is 108 bytes).
IPC_PATH_MAX = 107


def runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_RUNTIME_DIR/ctxkeep`, or `/tmp/ctxkeep-<uid>` when it is unset."""
    env = os.environ if env is None else env
    base = env.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base) / "ctxkeep"
    return Path(f"/tmp/ctxkeep-{os.getuid()}")


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/ctxkeep` (default `~/.local/share/ctxkeep`): the LMDB store."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ctxkeep"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/ctxkeep` (default `~/.local/state/ctxkeep`): clients' own state,
    such as the chat's input history."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ctxkeep"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ctxkeep/config.toml` (default `~/.config/...`)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ctxkeep" / "config.toml"


def curve_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ctxkeep/curve`: CURVE keys for TCP clients (server pair, authorized keys)."""
    return config_path(env).parent / "curve"


def control_endpoint(env: Mapping[str, str] | None = None) -> str:
    """The daemon's ROUTER endpoint; `CTXKEEP_CONTROL` overrides it."""
    env = os.environ if env is None else env
    return env.get("CTXKEEP_CONTROL") or f"ipc://{runtime_dir(env) / 'ctl'}"


def events_endpoint(env: Mapping[str, str] | None = None) -> str:
    """The daemon's XPUB endpoint; `CTXKEEP_EVENTS` overrides it."""
    env = os.environ if env is None else env
    return env.get("CTXKEEP_EVENTS") or f"ipc://{runtime_dir(env) / 'events'}"


def http_socket(control: str) -> Path:
    """The HTTP front door's Unix socket: `http.sock` beside an `ipc://` control socket,
    else in the runtime folder."""
    path = ipc_path(control)
    return (path.parent if path is not None else runtime_dir()) / "http.sock"


def http_token_path(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ctxkeep/http-token`: the bearer token HTTP clients over TCP send."""
    return config_path(env).parent / "http-token"


def ipc_path(endpoint: str) -> Path | None:
    """The filesystem path of an `ipc://` endpoint, or None for other transports."""
    return Path(endpoint[len("ipc://"):]) if endpoint.startswith("ipc://") else None
