"""`ctxkeepd`: run the daemon in the foreground (systemd runs it the same way), or one of
its maintenance subcommands (maintenance.py)."""

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

import zmq

from ctxkeep.daemon.config import ConfigError, load
from ctxkeep.daemon.maintenance import add_tools
from ctxkeep.daemon.server.runtime import AlreadyRunning, RuntimeDirError
from ctxkeep.daemon.store.store import StoreError
from ctxkeep.daemon.transports.zmq.curve import CurveError
from ctxkeep.protocol import DAEMON_VERSION


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ctxkeepd",
        description="The ctxkeep daemon: owns the Ollama calls and the chat sessions, "
                    "and serves clients over ZeroMQ. Without a subcommand it runs in the "
                    "foreground; stop it with SIGTERM or Ctrl-C.",
        epilog="Run `ctxkeepd COMMAND --help` for a subcommand's options.")
    parser.add_argument("--config", type=Path, default=None,
                        help="configuration file (default: $XDG_CONFIG_HOME/ctxkeep/config.toml)")
    parser.add_argument("--log-level", default="info",
                        choices=["debug", "info", "warning", "error"], help="default: info")
    parser.add_argument("--version", action="version", version=f"ctxkeepd {DAEMON_VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("run", help="run the daemon (the default)",
                        description="Run the daemon in the foreground.")
    add_tools(commands)
    return parser.parse_args(argv)


class _JournalPriority(logging.Filter):
    """Prefix `<N>` (syslog priority) so journald files each line at its level."""

    LEVELS = {"DEBUG": 7, "INFO": 6, "WARNING": 4, "ERROR": 3, "CRITICAL": 2}

    def filter(self, record: logging.LogRecord) -> bool:
        record.priority = self.LEVELS.get(record.levelname, 6)
        return True


def setup_logging(level: str) -> None:
    """One line per record on stderr, no colours; under systemd with journald priorities
    (journald adds the time), anywhere else (a terminal, a log file) with the time."""
    fmt = "%(levelname)s %(name)s: %(message)s"
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("JOURNAL_STREAM"):
        fmt = "<%(priority)d>" + fmt
        handler.addFilter(_JournalPriority())
    else:
        fmt = "%(asctime)s " + fmt
    handler.setFormatter(logging.Formatter(fmt))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


#: How long a thread holds the interpreter before another may run (Python's default: 5 ms).
SWITCH_INTERVAL_S = 0.001


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.config is not None and not args.config.is_file():
        print(f"ctxkeepd: no configuration file {args.config}: give an existing file, or leave "
              "--config out for $XDG_CONFIG_HOME/ctxkeep/config.toml", file=sys.stderr)
        return 2
    if getattr(args, "tool", None) is not None:
        return args.tool(args)
    setup_logging(args.log_level)
    log = logging.getLogger("ctxkeepd")
    try:
        config = load(args.config)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return 2
    # the server's modules (the HTTP front door, the model clients, recall) only to serve:
    # the maintenance subcommands and a configuration error are told in a fraction of the time
    from ctxkeep.daemon.server.daemon import Daemon
    try:
        daemon = Daemon(config, args.config)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return 2
    try:
        daemon.open()
    except (AlreadyRunning, RuntimeDirError, StoreError, CurveError, ConfigError, OSError,
            zmq.ZMQError) as exc:
        log.error("%s", exc)
        daemon.close()
        return 1
    # Work moved off the event loop (large imports' folds, indexing) runs in threads that
    # share the interpreter: the loop gets it back after at most this long, not 5 ms.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        asyncio.run(daemon.serve())
    except KeyboardInterrupt:
        pass
    except (RuntimeDirError, zmq.ZMQError, OSError) as exc:
        log.error("%s", exc)
        daemon.close()
        return 1
    return 0


def run() -> None:
    """The `ctxkeepd` program: `main`, then the process ends at once. By then the daemon has
    closed all it holds (store, sockets, its lock, the fork server, the worker threads); the
    log and the output are flushed here. The interpreter's own teardown (~700 modules' objects
    freed one by one) would add ~0.25 s of CPU to every stop and restart, for nothing."""
    code = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (a closed pipe): nothing left to tell it
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
