"""`ctxkeep daemon run|start|stop|restart|install|uninstall|status|backup|http`: run ctxkeepd,
or manage it (as a systemd user service, or by itself)."""

import argparse
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

from ...protocol import paths
from ...protocol.http_token import read_or_make
from ..core import CtxkeepError
from .common import connect, fail
from .user_service import ENABLE, HTTP_UNIT, UNITS, unit_folder, user_systemd


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser("daemon", help="run ctxkeepd, or install it as a systemd user service",
                                 description="Run ctxkeepd, or manage it as a systemd user service.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run_parser = actions.add_parser("run", help="run ctxkeepd in the foreground",
                                    description="Run ctxkeepd in the foreground (Ctrl-C stops it). "
                                                "Arguments after `--` go to ctxkeepd.")
    run_parser.add_argument("daemon_args", nargs=argparse.REMAINDER,
                            help="ctxkeepd options, e.g. -- --log-level debug")
    for name, said in (("start", "start ctxkeepd in the background (through systemd where it runs the service)"),
                       ("stop", "stop ctxkeepd, letting the turns under way finish (drain_timeout)"),
                       ("restart", "stop ctxkeepd, then start it again")):
        actions.add_parser(name, help=said, description=f"{said[:1].upper()}{said[1:]}.")
    install = actions.add_parser(
        "install", help="install and start the systemd user service",
        description="Write the systemd user units (the service and its two sockets) with the "
                    "ExecStart of this installation, then `systemctl --user daemon-reload` and "
                    "`enable --now`. Without systemd, print what to run instead.")
    install.add_argument("--print", dest="print_only", action="store_true",
                         help="print the service unit and change nothing")
    install.add_argument("--http", metavar="HOST:PORT",
                         help="also serve Ollama's and OpenAI's APIs on this TCP address, "
                              "socket-activated (ctxkeep-http.socket; e.g. 127.0.0.1:11435), "
                              "and make the bearer token clients send")
    actions.add_parser("uninstall", help="stop the service and remove its units",
                       description="Disable and stop the systemd user service, and remove its units.")
    actions.add_parser("status", help="the daemon's status and systemd's view of it",
                       description="The daemon's own status plus `systemctl --user status ctxkeep`.")
    backup = actions.add_parser("backup", help="copy the store, consistently, while it runs",
                                description="Write a consistent, compacted copy of the LMDB store "
                                            "into DEST (a new folder). See docs/operations.md "
                                            "for restoring it.")
    backup.add_argument("dest", metavar="DEST", help="a new, empty folder")
    http = actions.add_parser("http", help="where the HTTP front door (Ollama and OpenAI APIs) listens",
                              description="Print the HTTP front door's Unix socket and TCP URL, and "
                                          "how to point Ollama and OpenAI clients at it (docs/http.md).")
    http.add_argument("--show-token", action="store_true", help="print the bearer token too")
    return parser


def daemon_command() -> str:
    """The ctxkeepd of this installation (its own virtual environment)."""
    beside = Path(sys.executable).parent / "ctxkeepd"
    if beside.exists():
        return str(beside)
    found = shutil.which("ctxkeepd")
    return found or f"{sys.executable} -m ctxkeep.daemon.main"


def render(name: str, listen: str = "") -> str:
    """A unit as shipped, made to point at this installation, its data folder and its
    config folder (where the daemon keeps the HTTP token), and `listen` for the HTTP one."""
    text = (resources.files("ctxkeep.systemd") / name).read_text()
    lines = []
    for line in text.splitlines():
        if line.startswith("ExecStart="):
            line = f"ExecStart={daemon_command()}"
        elif line.startswith("ReadWritePaths="):
            line = f"ReadWritePaths={paths.data_dir()} {paths.config_path().parent}"
        elif line.startswith("ListenStream=") and listen:
            line = f"ListenStream={listen}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def is_address(value: str) -> bool:
    """Whether `--http` is HOST:PORT, as systemd's ListenStream takes it."""
    host, _, port = value.rpartition(":")
    return bool(host) and port.isdigit() and 0 < int(port) < 65536


def systemctl(*args: str) -> int:
    print(f"$ systemctl --user {' '.join(args)}")
    return subprocess.run(["systemctl", "--user", *args]).returncode


def install(args: argparse.Namespace) -> int:
    if args.print_only:
        print(render(UNITS[0]), end="")
        return 0
    listen = args.http or ""
    if listen and not is_address(listen):
        return fail(f"--http {listen}: write it as HOST:PORT, e.g. 127.0.0.1:11435")
    folder = unit_folder()
    folder.mkdir(parents=True, exist_ok=True)
    paths.data_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
    paths.config_path().parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    units = UNITS + ((HTTP_UNIT,) if listen else ())
    for name in units:
        (folder / name).write_text(render(name, listen))
        print(f"wrote {folder / name}")
    if listen:
        read_or_make(paths.http_token_path())
        print(f"HTTP clients over TCP send the bearer token in {paths.http_token_path()} "
              "(`ctxkeep daemon http --show-token`)")
    steps = [("daemon-reload",), ("enable", "--now", *ENABLE, *((HTTP_UNIT,) if listen else ()))]
    if not user_systemd():
        print("\nno systemd user manager answers here; to start the service, run:")
        for step in steps:
            print(f"  systemctl --user {' '.join(step)}")
        print("or run the daemon directly: ctxkeep daemon run")
        return 0
    try:
        with connect(args) as client:
            pid = client.status().status.pid
        print(f"note: a ctxkeepd is already running (pid {pid}); stop it so the service can "
              f"take over: kill {pid}", file=sys.stderr)
    except CtxkeepError:
        pass
    for step in steps:
        if systemctl(*step) != 0:
            return fail(f"`systemctl --user {' '.join(step)}` failed: see `journalctl --user -u ctxkeep`")
    print("ctxkeep is installed as a user service; logs: journalctl --user -u ctxkeep -f")
    return 0


def uninstall(args: argparse.Namespace) -> int:
    folder = unit_folder()
    http = (HTTP_UNIT,) if (folder / HTTP_UNIT).exists() else ()
    steps = [("disable", "--now", *ENABLE, *http), ("daemon-reload",)]
    managed = user_systemd()
    if managed:
        systemctl(*steps[0])
    for name in UNITS + http:
        if (folder / name).exists():
            (folder / name).unlink()
            print(f"removed {folder / name}")
    if managed:
        systemctl(*steps[1])
    else:
        print("no systemd user manager answers here; if the service was enabled, run:")
        for step in steps:
            print(f"  systemctl --user {' '.join(step)}")
    return 0


def status(args: argparse.Namespace) -> int:
    from . import status as status_command
    code = 0
    try:
        status_command.run(args)
    except CtxkeepError as exc:
        print(f"ctxkeepd: {exc}")
        code = 1
    print()
    if user_systemd():
        result = subprocess.run(["systemctl", "--user", "status", "--no-pager", "ctxkeep.service"],
                                capture_output=True, text=True)
        print(result.stdout or result.stderr, end="")
    else:
        installed = (unit_folder() / UNITS[0]).exists()
        print(f"systemd: no user manager here; unit {'installed' if installed else 'not installed'} "
              f"in {unit_folder()}")
    return code


def run(args: argparse.Namespace) -> int:
    if args.action in ("start", "stop", "restart"):
        from . import daemon_control
        return getattr(daemon_control, args.action)(args)
    if args.action == "install":
        return install(args)
    if args.action == "uninstall":
        return uninstall(args)
    if args.action == "status":
        args.json = False
        return status(args)
    if args.action == "http":
        from . import http
        return http.show(args)
    if args.action == "backup":
        return subprocess.run([sys.executable, "-m", "ctxkeep.daemon.main", "backup",
                               args.dest]).returncode
    extra = [a for a in args.daemon_args if a != "--"]
    # A separate program: the client never imports the daemon's code.
    os.execv(sys.executable, [sys.executable, "-m", "ctxkeep.daemon.main", *extra])
    return 0  # not reached
