"""How a turn that waits for its first token names the model server (turns/waiting.py):
Ollama's restart advice only where every server is Ollama."""

from types import SimpleNamespace

from ctxkeep.daemon.turns.waiting import server_of
from ctxkeep.protocol.structs import BackendStatus


def test_the_waiting_lines_name_the_server_that_is_configured():
    def backend(*kinds):
        return SimpleNamespace(hosts=lambda: [BackendStatus(name=k, kind=k, host="h", reachable=True) for k in kinds])
    assert server_of(backend("ollama")) == ("Ollama", "Restart it (`systemctl restart ollama`, or `ollama serve`)")
    assert server_of(backend("openai"))[0] == "the model server"
    assert "ollama" not in server_of(backend("ollama", "openai"))[1]
