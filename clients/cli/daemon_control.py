"""`ctxkeep daemon start|stop|restart`: the daemon started in the background, stopped and
started again — through systemd where its user service runs it, by itself where not."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..core import CtxkeepError, running_daemon
from .common import connect, fail
from .user_service import UNITS, unit_folder, user_systemd

#: How long `stop` waits for ctxkeepd to finish its turns and exit (its drain_timeout and more).
STOP_WAIT_S = 60.0
#: How long `start` waits for a new ctxkeepd to answer.
START_WAIT_S = 20.0


def log_path() -> Path:
    """Where a ctxkeepd started by `start` writes its log (as ./install.sh's does)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ctxkeep" / "ctxkeepd.log"


def _systemd_runs_it() -> bool:
    """Whether the user service is installed and a systemd user manager answers."""
    return (unit_folder() / UNITS[0]).exists() and user_systemd()


def _control(args) -> str:
    with connect(args) as client:
        return client.control


def start(args) -> int:
    control = _control(args)
    if running_daemon(control) is not None:
        print(f"ctxkeepd is already running (pid {running_daemon(control)})")
        return 0
    if _systemd_runs_it():
        code = subprocess.run(["systemctl", "--user", "start", "ctxkeep.service"]).returncode
        return code or _answers(args)
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        subprocess.Popen([sys.executable, "-m", "ctxkeep.daemon.main"], stdout=out, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    print(f"started ctxkeepd in the background (log: {log})")
    return _answers(args)


def _answers(args) -> int:
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        try:
            with connect(args) as client:
                status = client.status().status
            print(f"ctxkeepd {status.version} is running (pid {status.pid})")
            return 0
        except CtxkeepError:
            time.sleep(0.2)
    return fail(f"ctxkeepd did not answer within {START_WAIT_S:.0f} s: see {log_path()}")


def stop(args) -> int:
    control = _control(args)
    pid = running_daemon(control)
    if pid is None:
        print("ctxkeepd is not running")
        return 0
    if _systemd_runs_it():
        code = subprocess.run(["systemctl", "--user", "stop", "ctxkeep.service"]).returncode
        print("stopped the ctxkeep service (its sockets start it again on the next client: "
              "`systemctl --user stop ctxkeep-ctl.socket ctxkeep-events.socket` too to keep it down)")
        return code
    try:
        os.kill(pid, signal.SIGTERM)  # it finishes the turns under way (drain_timeout), then exits
    except ProcessLookupError:
        return 0
    except PermissionError:
        return fail(f"ctxkeepd (pid {pid}) is not yours to stop")
    deadline = time.monotonic() + STOP_WAIT_S
    while running_daemon(control) is not None:
        if time.monotonic() > deadline:
            return fail(f"ctxkeepd (pid {pid}) did not stop within {STOP_WAIT_S:.0f} s: `kill -9 {pid}` ends it "
                        "(what it was answering is marked interrupted at the next start)")
        time.sleep(0.1)
    print(f"stopped ctxkeepd (pid {pid})")
    return 0


def restart(args) -> int:
    if _systemd_runs_it():
        code = subprocess.run(["systemctl", "--user", "restart", "ctxkeep.service"]).returncode
        return code or _answers(args)
    return stop(args) or start(args)
