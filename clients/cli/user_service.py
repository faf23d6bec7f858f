"""The systemd user service: its units, where they are written, and whether a user manager
runs here (`ctxkeep daemon install|uninstall|status|start|stop|restart`)."""

import os
import shutil
import subprocess
from pathlib import Path

UNITS = ("ctxkeep.service", "ctxkeep-ctl.socket", "ctxkeep-events.socket")
ENABLE = ("ctxkeep-ctl.socket", "ctxkeep-events.socket", "ctxkeep.service")
#: The HTTP front door's TCP socket: written and enabled with `install --http`.
HTTP_UNIT = "ctxkeep-http.socket"


def unit_folder() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def user_systemd() -> bool:
    """Whether a systemd user manager answers here."""
    if not shutil.which("systemctl"):
        return False
    probe = subprocess.run(["systemctl", "--user", "show-environment"], capture_output=True, text=True)
    return probe.returncode == 0
