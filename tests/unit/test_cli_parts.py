"""The `ctxkeep` CLI's parts alone: the chat's completion, colours and terminals."""


def test_chat_completes_commands_and_paths(tmp_path):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from ctxkeep.clients.cli.lines import chat_completer
    (tmp_path / "notes.md").write_text("x")
    completer = chat_completer(["/help", "/usage", "/undo", "/quit"])

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text, len(text)), CompleteEvent())]
    assert complete("/u") == ["/usage", "/undo"]
    assert complete("/usage x") == []
    assert complete(f"look at @{tmp_path}/no") == ["tes.md"]
    assert complete("plain words") == []


def test_no_color_and_dumb_terminals_get_no_escapes(monkeypatch):
    import io

    from ctxkeep.clients.cli.common import Styles

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert Styles(Tty()).bold  # a terminal takes them
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Styles(Tty()).bold and not Styles(Tty()).red
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not Styles(Tty()).bold


def test_events_show_a_compactions_step_and_time_left():
    from ctxkeep.clients.cli.events import describe
    from ctxkeep.protocol.events import CompactionProgress
    event = CompactionProgress(session_id="s", compaction_id="c", step=1, steps=4, expected_s=30.4)
    assert describe(event) == "1/4 summary 1 of 4 written, ~30 s left"
