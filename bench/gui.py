"""ctxkeep-gui on long sessions (offscreen), beside baselines measured in the same run.

    QT_QPA_PLATFORM=offscreen python bench/gui.py [--messages 10000] [--rounds 5] [--batches 300]

Against ctxkeepd in its own process (a throw-away store; the stand-in in a process of its
own), with two sessions brought in by `session.import`: 10 messages and `--messages`.

- `first_paint`: from asking for a session (`session.get`) to the log's first paint with
  its last page shown, in the window's own process: the daemon's replies, the Markdown,
  the layout and the paint. Rounds alternate between the two sessions. Goal: ≤ 300 ms at
  10,000 messages.
- `stream_batch`: UI-thread time of one streamed batch (a `generation.token` event of
  about 60 characters, what the daemon sends every 30 ms): the window's handler and the
  event processing it causes (the layout and the paint of what changed, as Qt schedules
  them), at both sizes, with the view at the bottom (following the answer); a paragraph
  ends every 8 batches. `handler` is the window's own code (the text inserted and laid
  out), `total` adds Qt's paint. Baseline: the same pieces inserted at the end of a bare
  QTextBrowser 860 px wide (the log's text width), scrolled to its bottom. Goal: ≤ 2 ms,
  and the same at both sizes.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from common import daemon_for, emit, standin_process

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication, QTextBrowser

from ctxkeep.clients.gui.window import MainWindow
from ctxkeep.clients.gui.worker import DaemonWorker
from ctxkeep.protocol.events import GenerationToken

MODEL = "qwen2.5:7b"
PIECE = "and the answer goes on, a few words at a time, as tokens arrive "  # ~60 characters


def conversation(n: int) -> list[dict]:
    """`n` messages of prose, with some Markdown and a code block now and then."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append({"role": "user", "content": f"Question {i}: how does part {i} of the plan work?"})
        elif i % 10 == 1:
            out.append({"role": "assistant", "content": f"Step {i}, in **code**:\n\n```python\n"
                        f"def step_{i}(plan):\n    return [p for p in plan if p.ready]\n```\n"})
        else:
            out.append({"role": "assistant", "content": f"Part {i} works like this: *first* the "
                        "question is stored, then the model is asked, and the answer streams "
                        "back to every client that watches the session.\n\n- one\n- two"})
    return out


def import_session(client, name: str, n: int) -> str:
    messages = conversation(n)
    sid = client.import_session(name=name, model=MODEL, messages=messages[:1000]).session.id
    for at in range(1000, n, 1000):
        client.import_session(session=sid, messages=messages[at:at + 1000])
    return sid


class Painted(QObject):
    """Notes the time of each paint of a widget."""

    def __init__(self) -> None:
        super().__init__()
        self.last = 0.0

    def eventFilter(self, obj, event) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint:
            self.last = time.perf_counter()
        return False


def spin_until(app: QApplication, done, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not get there in time")
        app.processEvents()


def first_paint(app: QApplication, window: MainWindow, painted: Painted, sid: str) -> float:
    shown = []
    window.chat.shown.connect(lambda: shown.append(time.perf_counter()))
    t0 = time.perf_counter()
    window.open_session(sid)
    spin_until(app, lambda: shown and painted.last > shown[0])
    window.chat.shown.disconnect()
    return painted.last - t0


def piece(i: int) -> str:
    """A batch of an answer: a paragraph ends every 8 batches (~500 characters)."""
    return PIECE + ("\n\n" if i % 8 == 7 else "")


def stream_batches(app: QApplication, window: MainWindow, sid: str, batches: int
                   ) -> tuple[list[float], list[float]]:
    """(the window's handler, the handler and Qt's event processing after it), per batch."""
    handler, total = [], []
    for i in range(batches):
        event = GenerationToken(seq=0, time=0.0, session_id=sid, generation_id=f"bench{sid}",
                                index=i, text=piece(i))
        t0 = time.perf_counter()
        window.on_event("", event)
        t1 = time.perf_counter()
        app.processEvents()  # the layout and the paint of what changed, as Qt schedules them
        handler.append(t1 - t0)
        total.append(time.perf_counter() - t0)
    return handler, total


def bare_batches(app: QApplication, batches: int) -> tuple[list[float], list[float]]:
    bare = QTextBrowser()
    bare.resize(860, 600)
    bare.show()
    handler, total = [], []
    for i in range(batches):
        t0 = time.perf_counter()
        cursor = bare.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(piece(i))
        bare.verticalScrollBar().setValue(bare.verticalScrollBar().maximum())
        t1 = time.perf_counter()
        app.processEvents()
        handler.append(t1 - t0)
        total.append(time.perf_counter() - t0)
    bare.close()
    return handler, total


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1e3, 3),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=300)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    with standin_process() as url, daemon_for(url) as daemon:
        with daemon.client(timeout=60) as client:
            sizes = {10: import_session(client, "short", 10),
                     args.messages: import_session(client, "long", args.messages)}
        worker = DaemonWorker(daemon.control, daemon.events)
        window = MainWindow(worker, sizes[10], theme="dark")
        window.resize(1100, 720)
        painted = Painted()
        window.chat.log.viewport().installEventFilter(painted)
        worker.start()
        window.show()
        spin_until(app, lambda: window.chat.session is not None and not window.chat.loading)
        paints: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(args.rounds):
            for n, sid in sizes.items():
                paints[n].append(first_paint(app, window, painted, sid))
        for n in sizes:
            emit(bench="first_paint", messages=n, goal_ms=300, **ms(paints[n]))
        handler, total = bare_batches(app, args.batches)
        emit(bench="stream_batch", target="bare QTextBrowser", handler=ms(handler), total=ms(total))
        for n, sid in sizes.items():
            first_paint(app, window, painted, sid)
            handler, total = stream_batches(app, window, sid, args.batches)
            emit(bench="stream_batch", target="ctxkeep-gui", messages=n, goal_ms=2,
                 handler=ms(handler), total=ms(total))
        window.close()
        worker.stop()


if __name__ == "__main__":
    main()
