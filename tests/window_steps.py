"""What the window's tests share (tests/window/): the Qt application, a window on the test's
daemon or on one not started yet, and waiting with Qt's events running. tests/conftest.py
makes the fixtures every test's."""

import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtWidgets import QApplication

from ctxkeep.clients.gui.window import MainWindow
from ctxkeep.clients.gui.worker import DaemonWorker

MODEL = "qwen2.5:7b"


@pytest.fixture(scope="module")
def app():
    return QApplication.instance() or QApplication([])


def wait_until(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        QApplication.processEvents()
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


@pytest.fixture
def open_window(app, daemon):
    made = []

    def make(session=""):
        worker = DaemonWorker(daemon.control, daemon.events)
        window = MainWindow(worker, session)
        worker.start()
        window.show()
        made.append((worker, window))
        return window
    yield make
    for worker, window in made:
        window.close()
        worker.stop()


@pytest.fixture
def window_without_daemon(app, daemon_factory):
    """A window on a daemon not started yet: (the window, that daemon)."""
    d = daemon_factory()
    worker = DaemonWorker(d.control, d.events)
    window = MainWindow(worker)
    worker.start()
    window.show()
    yield window, d
    window.close()
    worker.stop()


def long_session(client, n: int, name: str = "long"):
    """A session of `n` messages, brought in as an import (no model calls)."""
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"line {i} of the long talk"}
                for i in range(n)]
    return client.import_session(name=name, model=MODEL, messages=messages).session
