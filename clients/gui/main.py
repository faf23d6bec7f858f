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
                    "stay in step on the same session. Keys: Ctrl+N new chat, Ctrl+K search, "
                    "Enter send, Shift+Enter new line, Esc stop the answer, Ctrl+Shift+C "
                    "compact, F2 rename.")
    parser.add_argument("session", nargs="?", default="", help="session id or name to open")
    parser.add_argument("--control", help="control endpoint (default: as for `ctxkeep`)")
    parser.add_argument("--events-endpoint", dest="events_endpoint", help="event endpoint")
    parser.add_argument("--theme", choices=["system", "light", "dark"], default="system",
                        help="colours: the platform's (default), light or dark")
    parser.add_argument("--size", default="1100x720", metavar="WxH", help="the window's size")
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

    try:
        width, height = (int(n) for n in args.size.lower().split("x"))
    except ValueError:
        print(f"ctxkeep-gui: --size {args.size!r}: write it as WIDTHxHEIGHT, e.g. 1100x720", file=sys.stderr)
        return 2
    app = QApplication(sys.argv[:1])
    app.setApplicationName("ctxkeep")
    worker = DaemonWorker(args.control, args.events_endpoint)
    window = MainWindow(worker, args.session, theme=args.theme)
    window.resize(width, height)
    worker.start()
    window.show()
    signal.signal(signal.SIGINT, lambda *_: app.quit())
    if args.screenshot:
        def shoot() -> None:
            if getattr(shoot, "done", False):
                return
            shoot.done = True  # type: ignore[attr-defined]
            app.processEvents()
            saved = window.grab().save(args.screenshot)
            print(f"saved {args.screenshot}" if saved else f"could not write {args.screenshot}",
                  file=sys.stderr)
            app.quit()
        # once the session (or the empty state, or the banner) shows; a bound in any case
        window.ready.connect(lambda: QTimer.singleShot(300, shoot))
        worker.connection.connect(lambda up, _: up or QTimer.singleShot(300, shoot))
        QTimer.singleShot(15000, shoot)
    code = app.exec()
    worker.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
