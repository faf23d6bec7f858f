"""The chat's input lines: on a terminal, prompt_toolkit's line editing (arrows, Home/End,
Ctrl-R search), a history kept across runs, and completion of /commands and @paths;
from a pipe, plain lines."""

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ...protocol import paths

#: Reads one line after showing the prompt; None at the end of input.
Reader = Callable[[str], "str | None"]


def plain_reader(prompt: str) -> str | None:
    """One line of input; None at end of input. Ctrl-C clears the line."""
    while True:
        try:
            return input(prompt)
        except KeyboardInterrupt:
            print()
        except EOFError:
            print()
            return None


def history_file() -> Path:
    """The chat's line history (every line typed), private to the user: the file 0600 in
    a 0700 folder, as the store and the sockets are (made so if it was not)."""
    path = paths.state_dir() / "chat_history"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
    path.chmod(0o600)
    return path


def reader(commands: Sequence[str]) -> Reader:
    """prompt_toolkit on a terminal, plain lines otherwise (a pipe, a test)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return plain_reader
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import ANSI
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.output.vt100 import Vt100_Output

    path = history_file()
    # No cursor position requests: a one-line prompt needs none, and a terminal (or a
    # program driving one) that does not answer them made every prompt's end, Ctrl-D
    # included, wait seconds for the answer.
    output = Vt100_Output(sys.stdout, _terminal_size, term=os.environ.get("TERM"), enable_cpr=False)
    session: PromptSession[str] = PromptSession(history=FileHistory(str(path)),
                                                completer=chat_completer(commands),
                                                complete_while_typing=False, output=output)

    def read(prompt: str) -> str | None:
        while True:
            try:
                return session.prompt(ANSI(prompt))
            except KeyboardInterrupt:  # clears the line
                continue
            except EOFError:
                print()
                return None
    return read


def _terminal_size():
    from prompt_toolkit.data_structures import Size
    columns, rows = shutil.get_terminal_size()
    return Size(rows=rows, columns=columns)


def chat_completer(commands: Sequence[str]):
    """Completes /commands at the start of a line and @paths anywhere (Tab)."""
    from prompt_toolkit.completion import Completer, Completion, PathCompleter
    from prompt_toolkit.document import Document

    files = PathCompleter(expanduser=True)

    class ChatCompleter(Completer):
        def get_completions(self, document: Document, complete_event) -> Iterable[Completion]:
            before = document.text_before_cursor
            if before.startswith("/") and " " not in before:
                for name in commands:
                    if name.startswith(before):
                        yield Completion(name, start_position=-len(before))
                return
            word = before.rsplit(None, 1)[-1] if before and not before[-1].isspace() else ""
            if word.startswith("@"):
                path = word[1:]
                yield from files.get_completions(Document(path, len(path)), complete_event)
    return ChatCompleter()
