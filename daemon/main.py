"""`ctxkeepd`: run the daemon in the foreground (systemd runs it the same way)."""

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from ..protocol import DAEMON_VERSION
from .config import ConfigError, load
from .runtime import AlreadyRunning, RuntimeDirError
from .server import Daemon
from .store import StoreError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ctxkeepd",
        description="The ctxkeep daemon: owns the Ollama calls and the chat sessions, "
                    "and serves clients over ZeroMQ. Runs in the foreground; stop it with "
                    "SIGTERM or Ctrl-C.")
    parser.add_argument("--config", type=Path, default=None,
                        help="configuration file (default: $XDG_CONFIG_HOME/ctxkeep/config.toml)")
    parser.add_argument("--log-level", default="info",
                        choices=["debug", "info", "warning", "error"], help="default: info")
    parser.add_argument("--version", action="version", version=f"ctxkeepd {DAEMON_VERSION}")
    return parser.parse_args(argv)


def setup_logging(level: str) -> None:
    """One line per record on stderr; journald adds the time."""
    fmt = "%(levelname)s %(name)s: %(message)s"
    if sys.stderr.isatty():
        fmt = "%(asctime)s " + fmt
    logging.basicConfig(level=level.upper(), format=fmt, stream=sys.stderr)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level)
    log = logging.getLogger("ctxkeepd")
    try:
        daemon = Daemon(load(args.config))
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return 2
    try:
        daemon.open()
    except (AlreadyRunning, RuntimeDirError, StoreError, OSError) as exc:
        log.error("%s", exc)
        daemon.close()
        return 1
    try:
        asyncio.run(daemon.serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
