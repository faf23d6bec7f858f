"""`ctxkeep-gui`: the Qt window (install with `pip install ctxkeep[gui]`)."""

import argparse
import signal
import sys

from ...protocol import DAEMON_VERSION


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ctxkeep-gui",
        description="A window on ctxkeepd: sessions, the chat with streamed answers, and a "
                    "context gauge (click it to compact). Any number of windows, and the CLI, "
                    "stay in step on the same session.")
    parser.add_argument("session", nargs="?", default="", help="session id or name to open")
    parser.add_argument("--control", help="control endpoint (default: as for `ctxkeep`)")
    parser.add_argument("--events-endpoint", dest="events_endpoint", help="event endpoint")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="render the window to PNG once it shows the session, then quit")
    parser.add_argument("--version", action="version", version=f"ctxkeep-gui {DAEMON_VERSION}")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication
    except ImportError:
        print("ctxkeep-gui needs PySide6: pip install 'ctxkeep[gui]'", file=sys.stderr)
        return 1
    from .window import MainWindow
    from .worker import DaemonWorker

    app = QApplication(sys.argv[:1])
    app.setApplicationName("ctxkeep")
    worker = DaemonWorker(args.control, args.events_endpoint)
    window = MainWindow(worker, args.session)
    worker.start()
    window.show()
    signal.signal(signal.SIGINT, lambda *_: app.quit())
    if args.screenshot:
        def shoot() -> None:
            window.grab().save(args.screenshot)
            app.quit()
        QTimer.singleShot(2500, shoot)
    code = app.exec()
    worker.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
